"""Upstream's greedy walk: kube-scheduler 1.37 workload-aware scheduling in bulk (``greedy``,
with its device, inter-pod, victim and fragmentation rules beside it), which is both the
baseline every plan is compared with and the CP-SAT model's hint. Pure.
"""
