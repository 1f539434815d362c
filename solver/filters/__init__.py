"""kube-scheduler's filter rules as predicates over the snapshot: node selectors, affinity and
taints (``selectors``), CSI attach limits (``attach``), node-local volumes (``localpv``),
consumable device capacity (``consumable``) and inter-pod affinity, anti-affinity and spread
(``interpod``). Pure: the problem, the baseline, the model and the plan's reasons all ask them.
"""
