"""The Kubernetes adapter: watch the cluster, ask the solver, evict, bind, record status."""
