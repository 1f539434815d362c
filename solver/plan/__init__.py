"""Assignment -> plan (``decode``): bindings, evictions, device allocations (``devices``) and,
for a workload left pending, the reason in kube-scheduler's words (``reasons``). Pure.
"""
