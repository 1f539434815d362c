"""gRPC server reflection under both names clients ask for: ``grpc.reflection.v1`` (grpcurl,
Postman and most tools try it first) and ``grpc.reflection.v1alpha`` (older clients).

grpcio-reflection 1.81 ships only v1alpha. The two protocols differ in their package name
alone (the messages and field numbers are the same), so v1 is served by the same servicer
with the same message classes, and its file descriptor, v1alpha's renamed, is added to the
descriptor pool so that reflection can describe itself under both names.
"""

from __future__ import annotations

from collections.abc import Sequence

import grpc
from google.protobuf import descriptor_pb2, descriptor_pool
from grpc_reflection.v1alpha import (  # type: ignore[import-untyped]  # no py.typed; types-grpcio-reflection not a dependency
    reflection,
    reflection_pb2,
)

V1ALPHA = reflection.SERVICE_NAME
V1 = V1ALPHA.replace(".v1alpha.", ".v1.")
_METHOD = "ServerReflectionInfo"


def _v1_file() -> descriptor_pb2.FileDescriptorProto:
    """grpc/reflection/v1/reflection.proto, derived from the v1alpha file shipped with grpcio."""
    old, new = reflection_pb2.DESCRIPTOR.package, V1.rsplit(".", 1)[0]
    proto = descriptor_pb2.FileDescriptorProto()
    reflection_pb2.DESCRIPTOR.CopyToProto(proto)
    proto.name = proto.name.replace("/v1alpha/", "/v1/")
    proto.package = new
    proto.options.Clear()

    def rename(messages: Sequence[descriptor_pb2.DescriptorProto]) -> None:
        for message in messages:
            for field in message.field:
                if field.type_name:  # scalars have none, and setting "" would mark one
                    field.type_name = field.type_name.replace(f".{old}.", f".{new}.")
            rename(message.nested_type)

    rename(proto.message_type)
    for service in proto.service:
        for method in service.method:
            method.input_type = method.input_type.replace(f".{old}.", f".{new}.")
            method.output_type = method.output_type.replace(f".{old}.", f".{new}.")
    return proto


def _register_v1_descriptor() -> None:
    pool = descriptor_pool.Default()  # type: ignore[no-untyped-call]  # unannotated in types-protobuf
    try:
        pool.FindServiceByName(V1)
    except KeyError:
        pool.Add(_v1_file())


def enable(server: grpc.Server, service_names: Sequence[str]) -> None:
    """Serve reflection for ``service_names`` (and for itself) under v1 and v1alpha."""
    _register_v1_descriptor()
    servicer = reflection.ReflectionServicer((*service_names, V1, V1ALPHA))
    handler = grpc.stream_stream_rpc_method_handler(
        servicer.ServerReflectionInfo,
        request_deserializer=reflection_pb2.ServerReflectionRequest.FromString,
        response_serializer=reflection_pb2.ServerReflectionResponse.SerializeToString)
    for name in (V1, V1ALPHA):
        server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(name, {_METHOD: handler}),))
