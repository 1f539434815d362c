"""The gRPC edge: the server (``server``) and its client, the wire conversion (``convert``),
error kinds to status codes (``status``), metrics and logs (``observe``, ``telemetry``),
reflection and the memory guard (``memguard``).
"""
