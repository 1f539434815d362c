from google.protobuf import struct_pb2 as _struct_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class PdbPolicy(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    PDB_POLICY_UNSPECIFIED: _ClassVar[PdbPolicy]
    PDB_POLICY_STRICT: _ClassVar[PdbPolicy]
    PDB_POLICY_SOFT: _ClassVar[PdbPolicy]

class TaintEffect(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    TAINT_EFFECT_UNSPECIFIED: _ClassVar[TaintEffect]
    TAINT_EFFECT_NO_SCHEDULE: _ClassVar[TaintEffect]
    TAINT_EFFECT_PREFER_NO_SCHEDULE: _ClassVar[TaintEffect]
    TAINT_EFFECT_NO_EXECUTE: _ClassVar[TaintEffect]

class TolerationOperator(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    TOLERATION_OPERATOR_UNSPECIFIED: _ClassVar[TolerationOperator]
    TOLERATION_OPERATOR_EQUAL: _ClassVar[TolerationOperator]
    TOLERATION_OPERATOR_EXISTS: _ClassVar[TolerationOperator]

class SelectorOperator(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    SELECTOR_OPERATOR_UNSPECIFIED: _ClassVar[SelectorOperator]
    SELECTOR_OPERATOR_IN: _ClassVar[SelectorOperator]
    SELECTOR_OPERATOR_NOT_IN: _ClassVar[SelectorOperator]
    SELECTOR_OPERATOR_EXISTS: _ClassVar[SelectorOperator]
    SELECTOR_OPERATOR_DOES_NOT_EXIST: _ClassVar[SelectorOperator]
    SELECTOR_OPERATOR_GT: _ClassVar[SelectorOperator]
    SELECTOR_OPERATOR_LT: _ClassVar[SelectorOperator]

class PlanStatus(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    PLAN_STATUS_UNSPECIFIED: _ClassVar[PlanStatus]
    PLAN_STATUS_OPTIMAL: _ClassVar[PlanStatus]
    PLAN_STATUS_FEASIBLE: _ClassVar[PlanStatus]
    PLAN_STATUS_INFEASIBLE: _ClassVar[PlanStatus]
    PLAN_STATUS_UNKNOWN: _ClassVar[PlanStatus]
    PLAN_STATUS_INVALID: _ClassVar[PlanStatus]
PDB_POLICY_UNSPECIFIED: PdbPolicy
PDB_POLICY_STRICT: PdbPolicy
PDB_POLICY_SOFT: PdbPolicy
TAINT_EFFECT_UNSPECIFIED: TaintEffect
TAINT_EFFECT_NO_SCHEDULE: TaintEffect
TAINT_EFFECT_PREFER_NO_SCHEDULE: TaintEffect
TAINT_EFFECT_NO_EXECUTE: TaintEffect
TOLERATION_OPERATOR_UNSPECIFIED: TolerationOperator
TOLERATION_OPERATOR_EQUAL: TolerationOperator
TOLERATION_OPERATOR_EXISTS: TolerationOperator
SELECTOR_OPERATOR_UNSPECIFIED: SelectorOperator
SELECTOR_OPERATOR_IN: SelectorOperator
SELECTOR_OPERATOR_NOT_IN: SelectorOperator
SELECTOR_OPERATOR_EXISTS: SelectorOperator
SELECTOR_OPERATOR_DOES_NOT_EXIST: SelectorOperator
SELECTOR_OPERATOR_GT: SelectorOperator
SELECTOR_OPERATOR_LT: SelectorOperator
PLAN_STATUS_UNSPECIFIED: PlanStatus
PLAN_STATUS_OPTIMAL: PlanStatus
PLAN_STATUS_FEASIBLE: PlanStatus
PLAN_STATUS_INFEASIBLE: PlanStatus
PLAN_STATUS_UNKNOWN: PlanStatus
PLAN_STATUS_INVALID: PlanStatus

class AdviseRequest(_message.Message):
    __slots__ = ("kind", "namespace", "name", "min_resource_version")
    KIND_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    MIN_RESOURCE_VERSION_FIELD_NUMBER: _ClassVar[int]
    kind: str
    namespace: str
    name: str
    min_resource_version: str
    def __init__(self, kind: _Optional[str] = ..., namespace: _Optional[str] = ..., name: _Optional[str] = ..., min_resource_version: _Optional[str] = ...) -> None: ...

class AdviseResponse(_message.Message):
    __slots__ = ("planned", "bindings", "evictions", "reason", "status", "age_seconds", "resource_version", "covered", "plan")
    PLANNED_FIELD_NUMBER: _ClassVar[int]
    BINDINGS_FIELD_NUMBER: _ClassVar[int]
    EVICTIONS_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    AGE_SECONDS_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_VERSION_FIELD_NUMBER: _ClassVar[int]
    COVERED_FIELD_NUMBER: _ClassVar[int]
    PLAN_FIELD_NUMBER: _ClassVar[int]
    planned: bool
    bindings: _containers.RepeatedCompositeFieldContainer[Binding]
    evictions: _containers.RepeatedCompositeFieldContainer[Eviction]
    reason: str
    status: str
    age_seconds: float
    resource_version: str
    covered: bool
    plan: int
    def __init__(self, planned: _Optional[bool] = ..., bindings: _Optional[_Iterable[_Union[Binding, _Mapping]]] = ..., evictions: _Optional[_Iterable[_Union[Eviction, _Mapping]]] = ..., reason: _Optional[str] = ..., status: _Optional[str] = ..., age_seconds: _Optional[float] = ..., resource_version: _Optional[str] = ..., covered: _Optional[bool] = ..., plan: _Optional[int] = ...) -> None: ...

class SolveRequest(_message.Message):
    __slots__ = ("state", "kubernetes_objects", "workload", "options", "request_id")
    STATE_FIELD_NUMBER: _ClassVar[int]
    KUBERNETES_OBJECTS_FIELD_NUMBER: _ClassVar[int]
    WORKLOAD_FIELD_NUMBER: _ClassVar[int]
    OPTIONS_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    state: ClusterState
    kubernetes_objects: bytes
    workload: str
    options: SolveOptions
    request_id: str
    def __init__(self, state: _Optional[_Union[ClusterState, _Mapping]] = ..., kubernetes_objects: _Optional[bytes] = ..., workload: _Optional[str] = ..., options: _Optional[_Union[SolveOptions, _Mapping]] = ..., request_id: _Optional[str] = ...) -> None: ...

class SolveOptions(_message.Message):
    __slots__ = ("time_limit_seconds", "workers", "seed", "relative_gap", "baseline_only", "no_decompose", "feature_gates", "no_dra_preemption", "pdb_policy", "expected_pods")
    TIME_LIMIT_SECONDS_FIELD_NUMBER: _ClassVar[int]
    WORKERS_FIELD_NUMBER: _ClassVar[int]
    SEED_FIELD_NUMBER: _ClassVar[int]
    RELATIVE_GAP_FIELD_NUMBER: _ClassVar[int]
    BASELINE_ONLY_FIELD_NUMBER: _ClassVar[int]
    NO_DECOMPOSE_FIELD_NUMBER: _ClassVar[int]
    FEATURE_GATES_FIELD_NUMBER: _ClassVar[int]
    NO_DRA_PREEMPTION_FIELD_NUMBER: _ClassVar[int]
    PDB_POLICY_FIELD_NUMBER: _ClassVar[int]
    EXPECTED_PODS_FIELD_NUMBER: _ClassVar[int]
    time_limit_seconds: float
    workers: int
    seed: int
    relative_gap: float
    baseline_only: bool
    no_decompose: bool
    feature_gates: str
    no_dra_preemption: bool
    pdb_policy: PdbPolicy
    expected_pods: bytes
    def __init__(self, time_limit_seconds: _Optional[float] = ..., workers: _Optional[int] = ..., seed: _Optional[int] = ..., relative_gap: _Optional[float] = ..., baseline_only: _Optional[bool] = ..., no_decompose: _Optional[bool] = ..., feature_gates: _Optional[str] = ..., no_dra_preemption: _Optional[bool] = ..., pdb_policy: _Optional[_Union[PdbPolicy, str]] = ..., expected_pods: _Optional[bytes] = ...) -> None: ...

class ClusterState(_message.Message):
    __slots__ = ("nodes", "pods", "groups", "pdbs", "devices", "device_classes", "claims", "claim_templates", "namespaces", "volume_claims", "volumes", "storage_classes", "counter_sets", "csi_nodes", "csi_drivers", "volume_attachments", "storage_capacities")
    NODES_FIELD_NUMBER: _ClassVar[int]
    PODS_FIELD_NUMBER: _ClassVar[int]
    GROUPS_FIELD_NUMBER: _ClassVar[int]
    PDBS_FIELD_NUMBER: _ClassVar[int]
    DEVICES_FIELD_NUMBER: _ClassVar[int]
    DEVICE_CLASSES_FIELD_NUMBER: _ClassVar[int]
    CLAIMS_FIELD_NUMBER: _ClassVar[int]
    CLAIM_TEMPLATES_FIELD_NUMBER: _ClassVar[int]
    NAMESPACES_FIELD_NUMBER: _ClassVar[int]
    VOLUME_CLAIMS_FIELD_NUMBER: _ClassVar[int]
    VOLUMES_FIELD_NUMBER: _ClassVar[int]
    STORAGE_CLASSES_FIELD_NUMBER: _ClassVar[int]
    COUNTER_SETS_FIELD_NUMBER: _ClassVar[int]
    CSI_NODES_FIELD_NUMBER: _ClassVar[int]
    CSI_DRIVERS_FIELD_NUMBER: _ClassVar[int]
    VOLUME_ATTACHMENTS_FIELD_NUMBER: _ClassVar[int]
    STORAGE_CAPACITIES_FIELD_NUMBER: _ClassVar[int]
    nodes: _containers.RepeatedCompositeFieldContainer[Node]
    pods: _containers.RepeatedCompositeFieldContainer[Pod]
    groups: _containers.RepeatedCompositeFieldContainer[Group]
    pdbs: _containers.RepeatedCompositeFieldContainer[PodDisruptionBudget]
    devices: _containers.RepeatedCompositeFieldContainer[Device]
    device_classes: _containers.RepeatedCompositeFieldContainer[DeviceClass]
    claims: _containers.RepeatedCompositeFieldContainer[ResourceClaim]
    claim_templates: _containers.RepeatedCompositeFieldContainer[ResourceClaim]
    namespaces: _containers.RepeatedCompositeFieldContainer[Namespace]
    volume_claims: _containers.RepeatedCompositeFieldContainer[PersistentVolumeClaim]
    volumes: _containers.RepeatedCompositeFieldContainer[PersistentVolume]
    storage_classes: _containers.RepeatedCompositeFieldContainer[StorageClass]
    counter_sets: _containers.RepeatedCompositeFieldContainer[CounterSet]
    csi_nodes: _containers.RepeatedCompositeFieldContainer[CsiNode]
    csi_drivers: _containers.RepeatedCompositeFieldContainer[CsiDriver]
    volume_attachments: _containers.RepeatedCompositeFieldContainer[VolumeAttachment]
    storage_capacities: _containers.RepeatedCompositeFieldContainer[CsiStorageCapacity]
    def __init__(self, nodes: _Optional[_Iterable[_Union[Node, _Mapping]]] = ..., pods: _Optional[_Iterable[_Union[Pod, _Mapping]]] = ..., groups: _Optional[_Iterable[_Union[Group, _Mapping]]] = ..., pdbs: _Optional[_Iterable[_Union[PodDisruptionBudget, _Mapping]]] = ..., devices: _Optional[_Iterable[_Union[Device, _Mapping]]] = ..., device_classes: _Optional[_Iterable[_Union[DeviceClass, _Mapping]]] = ..., claims: _Optional[_Iterable[_Union[ResourceClaim, _Mapping]]] = ..., claim_templates: _Optional[_Iterable[_Union[ResourceClaim, _Mapping]]] = ..., namespaces: _Optional[_Iterable[_Union[Namespace, _Mapping]]] = ..., volume_claims: _Optional[_Iterable[_Union[PersistentVolumeClaim, _Mapping]]] = ..., volumes: _Optional[_Iterable[_Union[PersistentVolume, _Mapping]]] = ..., storage_classes: _Optional[_Iterable[_Union[StorageClass, _Mapping]]] = ..., counter_sets: _Optional[_Iterable[_Union[CounterSet, _Mapping]]] = ..., csi_nodes: _Optional[_Iterable[_Union[CsiNode, _Mapping]]] = ..., csi_drivers: _Optional[_Iterable[_Union[CsiDriver, _Mapping]]] = ..., volume_attachments: _Optional[_Iterable[_Union[VolumeAttachment, _Mapping]]] = ..., storage_capacities: _Optional[_Iterable[_Union[CsiStorageCapacity, _Mapping]]] = ...) -> None: ...

class CsiStorageCapacity(_message.Message):
    __slots__ = ("namespace", "name", "storage_class_name", "capacity", "maximum_volume_size", "node_topology")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    STORAGE_CLASS_NAME_FIELD_NUMBER: _ClassVar[int]
    CAPACITY_FIELD_NUMBER: _ClassVar[int]
    MAXIMUM_VOLUME_SIZE_FIELD_NUMBER: _ClassVar[int]
    NODE_TOPOLOGY_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    name: str
    storage_class_name: str
    capacity: str
    maximum_volume_size: str
    node_topology: LabelSelector
    def __init__(self, namespace: _Optional[str] = ..., name: _Optional[str] = ..., storage_class_name: _Optional[str] = ..., capacity: _Optional[str] = ..., maximum_volume_size: _Optional[str] = ..., node_topology: _Optional[_Union[LabelSelector, _Mapping]] = ...) -> None: ...

class CsiNode(_message.Message):
    __slots__ = ("name", "drivers")
    NAME_FIELD_NUMBER: _ClassVar[int]
    DRIVERS_FIELD_NUMBER: _ClassVar[int]
    name: str
    drivers: _containers.RepeatedCompositeFieldContainer[CsiNodeDriver]
    def __init__(self, name: _Optional[str] = ..., drivers: _Optional[_Iterable[_Union[CsiNodeDriver, _Mapping]]] = ...) -> None: ...

class CsiNodeDriver(_message.Message):
    __slots__ = ("name", "allocatable_count")
    NAME_FIELD_NUMBER: _ClassVar[int]
    ALLOCATABLE_COUNT_FIELD_NUMBER: _ClassVar[int]
    name: str
    allocatable_count: int
    def __init__(self, name: _Optional[str] = ..., allocatable_count: _Optional[int] = ...) -> None: ...

class CsiDriver(_message.Message):
    __slots__ = ("name", "prevent_pod_scheduling_if_missing", "storage_capacity")
    NAME_FIELD_NUMBER: _ClassVar[int]
    PREVENT_POD_SCHEDULING_IF_MISSING_FIELD_NUMBER: _ClassVar[int]
    STORAGE_CAPACITY_FIELD_NUMBER: _ClassVar[int]
    name: str
    prevent_pod_scheduling_if_missing: bool
    storage_capacity: bool
    def __init__(self, name: _Optional[str] = ..., prevent_pod_scheduling_if_missing: _Optional[bool] = ..., storage_capacity: _Optional[bool] = ...) -> None: ...

class VolumeAttachment(_message.Message):
    __slots__ = ("name", "attacher", "node_name", "persistent_volume_name")
    NAME_FIELD_NUMBER: _ClassVar[int]
    ATTACHER_FIELD_NUMBER: _ClassVar[int]
    NODE_NAME_FIELD_NUMBER: _ClassVar[int]
    PERSISTENT_VOLUME_NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    attacher: str
    node_name: str
    persistent_volume_name: str
    def __init__(self, name: _Optional[str] = ..., attacher: _Optional[str] = ..., node_name: _Optional[str] = ..., persistent_volume_name: _Optional[str] = ...) -> None: ...

class PersistentVolumeClaim(_message.Message):
    __slots__ = ("namespace", "name", "storage_class_name", "volume_name", "bind_completed", "access_modes", "storage", "lost", "deleting", "selector", "volume_mode", "volume_attributes_class_name", "selected_node")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    STORAGE_CLASS_NAME_FIELD_NUMBER: _ClassVar[int]
    VOLUME_NAME_FIELD_NUMBER: _ClassVar[int]
    BIND_COMPLETED_FIELD_NUMBER: _ClassVar[int]
    ACCESS_MODES_FIELD_NUMBER: _ClassVar[int]
    STORAGE_FIELD_NUMBER: _ClassVar[int]
    LOST_FIELD_NUMBER: _ClassVar[int]
    DELETING_FIELD_NUMBER: _ClassVar[int]
    SELECTOR_FIELD_NUMBER: _ClassVar[int]
    VOLUME_MODE_FIELD_NUMBER: _ClassVar[int]
    VOLUME_ATTRIBUTES_CLASS_NAME_FIELD_NUMBER: _ClassVar[int]
    SELECTED_NODE_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    name: str
    storage_class_name: str
    volume_name: str
    bind_completed: bool
    access_modes: _containers.RepeatedScalarFieldContainer[str]
    storage: str
    lost: bool
    deleting: bool
    selector: LabelSelector
    volume_mode: str
    volume_attributes_class_name: str
    selected_node: str
    def __init__(self, namespace: _Optional[str] = ..., name: _Optional[str] = ..., storage_class_name: _Optional[str] = ..., volume_name: _Optional[str] = ..., bind_completed: _Optional[bool] = ..., access_modes: _Optional[_Iterable[str]] = ..., storage: _Optional[str] = ..., lost: _Optional[bool] = ..., deleting: _Optional[bool] = ..., selector: _Optional[_Union[LabelSelector, _Mapping]] = ..., volume_mode: _Optional[str] = ..., volume_attributes_class_name: _Optional[str] = ..., selected_node: _Optional[str] = ...) -> None: ...

class PersistentVolume(_message.Message):
    __slots__ = ("name", "labels", "storage_class_name", "capacity", "access_modes", "claim_namespace", "claim_name", "node_affinity", "deleting", "csi_driver", "csi_volume_handle", "volume_mode", "volume_attributes_class_name", "phase")
    class LabelsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    NAME_FIELD_NUMBER: _ClassVar[int]
    LABELS_FIELD_NUMBER: _ClassVar[int]
    STORAGE_CLASS_NAME_FIELD_NUMBER: _ClassVar[int]
    CAPACITY_FIELD_NUMBER: _ClassVar[int]
    ACCESS_MODES_FIELD_NUMBER: _ClassVar[int]
    CLAIM_NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    CLAIM_NAME_FIELD_NUMBER: _ClassVar[int]
    NODE_AFFINITY_FIELD_NUMBER: _ClassVar[int]
    DELETING_FIELD_NUMBER: _ClassVar[int]
    CSI_DRIVER_FIELD_NUMBER: _ClassVar[int]
    CSI_VOLUME_HANDLE_FIELD_NUMBER: _ClassVar[int]
    VOLUME_MODE_FIELD_NUMBER: _ClassVar[int]
    VOLUME_ATTRIBUTES_CLASS_NAME_FIELD_NUMBER: _ClassVar[int]
    PHASE_FIELD_NUMBER: _ClassVar[int]
    name: str
    labels: _containers.ScalarMap[str, str]
    storage_class_name: str
    capacity: str
    access_modes: _containers.RepeatedScalarFieldContainer[str]
    claim_namespace: str
    claim_name: str
    node_affinity: _containers.RepeatedCompositeFieldContainer[NodeSelectorTerm]
    deleting: bool
    csi_driver: str
    csi_volume_handle: str
    volume_mode: str
    volume_attributes_class_name: str
    phase: str
    def __init__(self, name: _Optional[str] = ..., labels: _Optional[_Mapping[str, str]] = ..., storage_class_name: _Optional[str] = ..., capacity: _Optional[str] = ..., access_modes: _Optional[_Iterable[str]] = ..., claim_namespace: _Optional[str] = ..., claim_name: _Optional[str] = ..., node_affinity: _Optional[_Iterable[_Union[NodeSelectorTerm, _Mapping]]] = ..., deleting: _Optional[bool] = ..., csi_driver: _Optional[str] = ..., csi_volume_handle: _Optional[str] = ..., volume_mode: _Optional[str] = ..., volume_attributes_class_name: _Optional[str] = ..., phase: _Optional[str] = ...) -> None: ...

class StorageClass(_message.Message):
    __slots__ = ("name", "provisioner", "volume_binding_mode", "allowed_topologies")
    NAME_FIELD_NUMBER: _ClassVar[int]
    PROVISIONER_FIELD_NUMBER: _ClassVar[int]
    VOLUME_BINDING_MODE_FIELD_NUMBER: _ClassVar[int]
    ALLOWED_TOPOLOGIES_FIELD_NUMBER: _ClassVar[int]
    name: str
    provisioner: str
    volume_binding_mode: str
    allowed_topologies: _containers.RepeatedCompositeFieldContainer[NodeSelectorTerm]
    def __init__(self, name: _Optional[str] = ..., provisioner: _Optional[str] = ..., volume_binding_mode: _Optional[str] = ..., allowed_topologies: _Optional[_Iterable[_Union[NodeSelectorTerm, _Mapping]]] = ...) -> None: ...

class Namespace(_message.Message):
    __slots__ = ("name", "labels")
    class LabelsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    NAME_FIELD_NUMBER: _ClassVar[int]
    LABELS_FIELD_NUMBER: _ClassVar[int]
    name: str
    labels: _containers.ScalarMap[str, str]
    def __init__(self, name: _Optional[str] = ..., labels: _Optional[_Mapping[str, str]] = ...) -> None: ...

class LabelSelector(_message.Message):
    __slots__ = ("match_labels", "match_expressions")
    class MatchLabelsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    MATCH_LABELS_FIELD_NUMBER: _ClassVar[int]
    MATCH_EXPRESSIONS_FIELD_NUMBER: _ClassVar[int]
    match_labels: _containers.ScalarMap[str, str]
    match_expressions: _containers.RepeatedCompositeFieldContainer[SelectorRequirement]
    def __init__(self, match_labels: _Optional[_Mapping[str, str]] = ..., match_expressions: _Optional[_Iterable[_Union[SelectorRequirement, _Mapping]]] = ...) -> None: ...

class PodAffinityTerm(_message.Message):
    __slots__ = ("label_selector", "namespaces", "namespace_selector", "topology_key", "match_label_keys", "mismatch_label_keys")
    LABEL_SELECTOR_FIELD_NUMBER: _ClassVar[int]
    NAMESPACES_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_SELECTOR_FIELD_NUMBER: _ClassVar[int]
    TOPOLOGY_KEY_FIELD_NUMBER: _ClassVar[int]
    MATCH_LABEL_KEYS_FIELD_NUMBER: _ClassVar[int]
    MISMATCH_LABEL_KEYS_FIELD_NUMBER: _ClassVar[int]
    label_selector: LabelSelector
    namespaces: _containers.RepeatedScalarFieldContainer[str]
    namespace_selector: LabelSelector
    topology_key: str
    match_label_keys: _containers.RepeatedScalarFieldContainer[str]
    mismatch_label_keys: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, label_selector: _Optional[_Union[LabelSelector, _Mapping]] = ..., namespaces: _Optional[_Iterable[str]] = ..., namespace_selector: _Optional[_Union[LabelSelector, _Mapping]] = ..., topology_key: _Optional[str] = ..., match_label_keys: _Optional[_Iterable[str]] = ..., mismatch_label_keys: _Optional[_Iterable[str]] = ...) -> None: ...

class TopologySpreadConstraint(_message.Message):
    __slots__ = ("max_skew", "topology_key", "when_unsatisfiable", "label_selector", "min_domains", "node_affinity_policy", "node_taints_policy", "match_label_keys")
    MAX_SKEW_FIELD_NUMBER: _ClassVar[int]
    TOPOLOGY_KEY_FIELD_NUMBER: _ClassVar[int]
    WHEN_UNSATISFIABLE_FIELD_NUMBER: _ClassVar[int]
    LABEL_SELECTOR_FIELD_NUMBER: _ClassVar[int]
    MIN_DOMAINS_FIELD_NUMBER: _ClassVar[int]
    NODE_AFFINITY_POLICY_FIELD_NUMBER: _ClassVar[int]
    NODE_TAINTS_POLICY_FIELD_NUMBER: _ClassVar[int]
    MATCH_LABEL_KEYS_FIELD_NUMBER: _ClassVar[int]
    max_skew: int
    topology_key: str
    when_unsatisfiable: str
    label_selector: LabelSelector
    min_domains: int
    node_affinity_policy: str
    node_taints_policy: str
    match_label_keys: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, max_skew: _Optional[int] = ..., topology_key: _Optional[str] = ..., when_unsatisfiable: _Optional[str] = ..., label_selector: _Optional[_Union[LabelSelector, _Mapping]] = ..., min_domains: _Optional[int] = ..., node_affinity_policy: _Optional[str] = ..., node_taints_policy: _Optional[str] = ..., match_label_keys: _Optional[_Iterable[str]] = ...) -> None: ...

class HostPort(_message.Message):
    __slots__ = ("port", "protocol", "host_ip")
    PORT_FIELD_NUMBER: _ClassVar[int]
    PROTOCOL_FIELD_NUMBER: _ClassVar[int]
    HOST_IP_FIELD_NUMBER: _ClassVar[int]
    port: int
    protocol: str
    host_ip: str
    def __init__(self, port: _Optional[int] = ..., protocol: _Optional[str] = ..., host_ip: _Optional[str] = ...) -> None: ...

class Taint(_message.Message):
    __slots__ = ("key", "value", "effect")
    KEY_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    EFFECT_FIELD_NUMBER: _ClassVar[int]
    key: str
    value: str
    effect: TaintEffect
    def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ..., effect: _Optional[_Union[TaintEffect, str]] = ...) -> None: ...

class Toleration(_message.Message):
    __slots__ = ("key", "value", "operator", "effect")
    KEY_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    OPERATOR_FIELD_NUMBER: _ClassVar[int]
    EFFECT_FIELD_NUMBER: _ClassVar[int]
    key: str
    value: str
    operator: TolerationOperator
    effect: TaintEffect
    def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ..., operator: _Optional[_Union[TolerationOperator, str]] = ..., effect: _Optional[_Union[TaintEffect, str]] = ...) -> None: ...

class SelectorRequirement(_message.Message):
    __slots__ = ("key", "values", "operator")
    KEY_FIELD_NUMBER: _ClassVar[int]
    VALUES_FIELD_NUMBER: _ClassVar[int]
    OPERATOR_FIELD_NUMBER: _ClassVar[int]
    key: str
    values: _containers.RepeatedScalarFieldContainer[str]
    operator: SelectorOperator
    def __init__(self, key: _Optional[str] = ..., values: _Optional[_Iterable[str]] = ..., operator: _Optional[_Union[SelectorOperator, str]] = ...) -> None: ...

class NodeSelectorTerm(_message.Message):
    __slots__ = ("match_expressions", "match_fields")
    MATCH_EXPRESSIONS_FIELD_NUMBER: _ClassVar[int]
    MATCH_FIELDS_FIELD_NUMBER: _ClassVar[int]
    match_expressions: _containers.RepeatedCompositeFieldContainer[SelectorRequirement]
    match_fields: _containers.RepeatedCompositeFieldContainer[SelectorRequirement]
    def __init__(self, match_expressions: _Optional[_Iterable[_Union[SelectorRequirement, _Mapping]]] = ..., match_fields: _Optional[_Iterable[_Union[SelectorRequirement, _Mapping]]] = ...) -> None: ...

class Node(_message.Message):
    __slots__ = ("name", "labels", "allocatable", "taints", "unschedulable")
    class LabelsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    class AllocatableEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: int
        def __init__(self, key: _Optional[str] = ..., value: _Optional[int] = ...) -> None: ...
    NAME_FIELD_NUMBER: _ClassVar[int]
    LABELS_FIELD_NUMBER: _ClassVar[int]
    ALLOCATABLE_FIELD_NUMBER: _ClassVar[int]
    TAINTS_FIELD_NUMBER: _ClassVar[int]
    UNSCHEDULABLE_FIELD_NUMBER: _ClassVar[int]
    name: str
    labels: _containers.ScalarMap[str, str]
    allocatable: _containers.ScalarMap[str, int]
    taints: _containers.RepeatedCompositeFieldContainer[Taint]
    unschedulable: bool
    def __init__(self, name: _Optional[str] = ..., labels: _Optional[_Mapping[str, str]] = ..., allocatable: _Optional[_Mapping[str, int]] = ..., taints: _Optional[_Iterable[_Union[Taint, _Mapping]]] = ..., unschedulable: _Optional[bool] = ...) -> None: ...

class PodClaimRef(_message.Message):
    __slots__ = ("name", "claim", "template", "generated")
    NAME_FIELD_NUMBER: _ClassVar[int]
    CLAIM_FIELD_NUMBER: _ClassVar[int]
    TEMPLATE_FIELD_NUMBER: _ClassVar[int]
    GENERATED_FIELD_NUMBER: _ClassVar[int]
    name: str
    claim: str
    template: str
    generated: str
    def __init__(self, name: _Optional[str] = ..., claim: _Optional[str] = ..., template: _Optional[str] = ..., generated: _Optional[str] = ...) -> None: ...

class Pod(_message.Message):
    __slots__ = ("namespace", "name", "labels", "node", "requests", "group", "priority", "preemption_policy", "node_selector", "affinity", "tolerations", "preemption_cost", "start_time", "claims", "scheduling_gates", "terminating", "nominated_node", "scheduler_name", "pod_affinity", "pod_anti_affinity", "topology_spread", "host_ports", "ready", "not_started", "volume_claims", "volumes", "value")
    class LabelsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    class RequestsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: int
        def __init__(self, key: _Optional[str] = ..., value: _Optional[int] = ...) -> None: ...
    class NodeSelectorEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    LABELS_FIELD_NUMBER: _ClassVar[int]
    NODE_FIELD_NUMBER: _ClassVar[int]
    REQUESTS_FIELD_NUMBER: _ClassVar[int]
    GROUP_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_FIELD_NUMBER: _ClassVar[int]
    PREEMPTION_POLICY_FIELD_NUMBER: _ClassVar[int]
    NODE_SELECTOR_FIELD_NUMBER: _ClassVar[int]
    AFFINITY_FIELD_NUMBER: _ClassVar[int]
    TOLERATIONS_FIELD_NUMBER: _ClassVar[int]
    PREEMPTION_COST_FIELD_NUMBER: _ClassVar[int]
    START_TIME_FIELD_NUMBER: _ClassVar[int]
    CLAIMS_FIELD_NUMBER: _ClassVar[int]
    SCHEDULING_GATES_FIELD_NUMBER: _ClassVar[int]
    TERMINATING_FIELD_NUMBER: _ClassVar[int]
    NOMINATED_NODE_FIELD_NUMBER: _ClassVar[int]
    SCHEDULER_NAME_FIELD_NUMBER: _ClassVar[int]
    POD_AFFINITY_FIELD_NUMBER: _ClassVar[int]
    POD_ANTI_AFFINITY_FIELD_NUMBER: _ClassVar[int]
    TOPOLOGY_SPREAD_FIELD_NUMBER: _ClassVar[int]
    HOST_PORTS_FIELD_NUMBER: _ClassVar[int]
    READY_FIELD_NUMBER: _ClassVar[int]
    NOT_STARTED_FIELD_NUMBER: _ClassVar[int]
    VOLUME_CLAIMS_FIELD_NUMBER: _ClassVar[int]
    VOLUMES_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    name: str
    labels: _containers.ScalarMap[str, str]
    node: str
    requests: _containers.ScalarMap[str, int]
    group: str
    priority: int
    preemption_policy: str
    node_selector: _containers.ScalarMap[str, str]
    affinity: _containers.RepeatedCompositeFieldContainer[NodeSelectorTerm]
    tolerations: _containers.RepeatedCompositeFieldContainer[Toleration]
    preemption_cost: float
    start_time: str
    claims: _containers.RepeatedCompositeFieldContainer[PodClaimRef]
    scheduling_gates: _containers.RepeatedScalarFieldContainer[str]
    terminating: bool
    nominated_node: str
    scheduler_name: str
    pod_affinity: _containers.RepeatedCompositeFieldContainer[PodAffinityTerm]
    pod_anti_affinity: _containers.RepeatedCompositeFieldContainer[PodAffinityTerm]
    topology_spread: _containers.RepeatedCompositeFieldContainer[TopologySpreadConstraint]
    host_ports: _containers.RepeatedCompositeFieldContainer[HostPort]
    ready: bool
    not_started: bool
    volume_claims: _containers.RepeatedScalarFieldContainer[str]
    volumes: _containers.RepeatedCompositeFieldContainer[_struct_pb2.Struct]
    value: int
    def __init__(self, namespace: _Optional[str] = ..., name: _Optional[str] = ..., labels: _Optional[_Mapping[str, str]] = ..., node: _Optional[str] = ..., requests: _Optional[_Mapping[str, int]] = ..., group: _Optional[str] = ..., priority: _Optional[int] = ..., preemption_policy: _Optional[str] = ..., node_selector: _Optional[_Mapping[str, str]] = ..., affinity: _Optional[_Iterable[_Union[NodeSelectorTerm, _Mapping]]] = ..., tolerations: _Optional[_Iterable[_Union[Toleration, _Mapping]]] = ..., preemption_cost: _Optional[float] = ..., start_time: _Optional[str] = ..., claims: _Optional[_Iterable[_Union[PodClaimRef, _Mapping]]] = ..., scheduling_gates: _Optional[_Iterable[str]] = ..., terminating: _Optional[bool] = ..., nominated_node: _Optional[str] = ..., scheduler_name: _Optional[str] = ..., pod_affinity: _Optional[_Iterable[_Union[PodAffinityTerm, _Mapping]]] = ..., pod_anti_affinity: _Optional[_Iterable[_Union[PodAffinityTerm, _Mapping]]] = ..., topology_spread: _Optional[_Iterable[_Union[TopologySpreadConstraint, _Mapping]]] = ..., host_ports: _Optional[_Iterable[_Union[HostPort, _Mapping]]] = ..., ready: _Optional[bool] = ..., not_started: _Optional[bool] = ..., volume_claims: _Optional[_Iterable[str]] = ..., volumes: _Optional[_Iterable[_Union[_struct_pb2.Struct, _Mapping]]] = ..., value: _Optional[int] = ...) -> None: ...

class Group(_message.Message):
    __slots__ = ("namespace", "name", "kind", "parent", "min_count", "topology_key", "disruption_all", "priority", "preemption_policy", "claims", "value")
    class Kind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        KIND_UNSPECIFIED: _ClassVar[Group.Kind]
        POD_GROUP: _ClassVar[Group.Kind]
        COMPOSITE_POD_GROUP: _ClassVar[Group.Kind]
    KIND_UNSPECIFIED: Group.Kind
    POD_GROUP: Group.Kind
    COMPOSITE_POD_GROUP: Group.Kind
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    PARENT_FIELD_NUMBER: _ClassVar[int]
    MIN_COUNT_FIELD_NUMBER: _ClassVar[int]
    TOPOLOGY_KEY_FIELD_NUMBER: _ClassVar[int]
    DISRUPTION_ALL_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_FIELD_NUMBER: _ClassVar[int]
    PREEMPTION_POLICY_FIELD_NUMBER: _ClassVar[int]
    CLAIMS_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    name: str
    kind: Group.Kind
    parent: str
    min_count: int
    topology_key: str
    disruption_all: bool
    priority: int
    preemption_policy: str
    claims: _containers.RepeatedCompositeFieldContainer[PodClaimRef]
    value: int
    def __init__(self, namespace: _Optional[str] = ..., name: _Optional[str] = ..., kind: _Optional[_Union[Group.Kind, str]] = ..., parent: _Optional[str] = ..., min_count: _Optional[int] = ..., topology_key: _Optional[str] = ..., disruption_all: _Optional[bool] = ..., priority: _Optional[int] = ..., preemption_policy: _Optional[str] = ..., claims: _Optional[_Iterable[_Union[PodClaimRef, _Mapping]]] = ..., value: _Optional[int] = ...) -> None: ...

class PodDisruptionBudget(_message.Message):
    __slots__ = ("namespace", "name", "match_labels", "match_expressions", "disruptions_allowed", "generation", "observed_generation", "unhealthy_pod_eviction_policy", "current_healthy", "desired_healthy")
    class MatchLabelsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    MATCH_LABELS_FIELD_NUMBER: _ClassVar[int]
    MATCH_EXPRESSIONS_FIELD_NUMBER: _ClassVar[int]
    DISRUPTIONS_ALLOWED_FIELD_NUMBER: _ClassVar[int]
    GENERATION_FIELD_NUMBER: _ClassVar[int]
    OBSERVED_GENERATION_FIELD_NUMBER: _ClassVar[int]
    UNHEALTHY_POD_EVICTION_POLICY_FIELD_NUMBER: _ClassVar[int]
    CURRENT_HEALTHY_FIELD_NUMBER: _ClassVar[int]
    DESIRED_HEALTHY_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    name: str
    match_labels: _containers.ScalarMap[str, str]
    match_expressions: _containers.RepeatedCompositeFieldContainer[SelectorRequirement]
    disruptions_allowed: int
    generation: int
    observed_generation: int
    unhealthy_pod_eviction_policy: str
    current_healthy: int
    desired_healthy: int
    def __init__(self, namespace: _Optional[str] = ..., name: _Optional[str] = ..., match_labels: _Optional[_Mapping[str, str]] = ..., match_expressions: _Optional[_Iterable[_Union[SelectorRequirement, _Mapping]]] = ..., disruptions_allowed: _Optional[int] = ..., generation: _Optional[int] = ..., observed_generation: _Optional[int] = ..., unhealthy_pod_eviction_policy: _Optional[str] = ..., current_healthy: _Optional[int] = ..., desired_healthy: _Optional[int] = ...) -> None: ...

class AttributeValue(_message.Message):
    __slots__ = ("bool", "int", "string", "version")
    BOOL_FIELD_NUMBER: _ClassVar[int]
    INT_FIELD_NUMBER: _ClassVar[int]
    STRING_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    bool: bool
    int: int
    string: str
    version: str
    def __init__(self, bool: _Optional[bool] = ..., int: _Optional[int] = ..., string: _Optional[str] = ..., version: _Optional[str] = ...) -> None: ...

class Device(_message.Message):
    __slots__ = ("driver", "pool", "name", "attributes", "capacity", "allow_multiple_allocations", "taints", "node", "node_selector", "all_nodes", "consumes_counters", "capacity_policies")
    class AttributesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: AttributeValue
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[AttributeValue, _Mapping]] = ...) -> None: ...
    class CapacityEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    class CapacityPoliciesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: CapacityRequestPolicy
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[CapacityRequestPolicy, _Mapping]] = ...) -> None: ...
    DRIVER_FIELD_NUMBER: _ClassVar[int]
    POOL_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    ATTRIBUTES_FIELD_NUMBER: _ClassVar[int]
    CAPACITY_FIELD_NUMBER: _ClassVar[int]
    ALLOW_MULTIPLE_ALLOCATIONS_FIELD_NUMBER: _ClassVar[int]
    TAINTS_FIELD_NUMBER: _ClassVar[int]
    NODE_FIELD_NUMBER: _ClassVar[int]
    NODE_SELECTOR_FIELD_NUMBER: _ClassVar[int]
    ALL_NODES_FIELD_NUMBER: _ClassVar[int]
    CONSUMES_COUNTERS_FIELD_NUMBER: _ClassVar[int]
    CAPACITY_POLICIES_FIELD_NUMBER: _ClassVar[int]
    driver: str
    pool: str
    name: str
    attributes: _containers.MessageMap[str, AttributeValue]
    capacity: _containers.ScalarMap[str, str]
    allow_multiple_allocations: bool
    taints: _containers.RepeatedCompositeFieldContainer[Taint]
    node: str
    node_selector: _containers.RepeatedCompositeFieldContainer[NodeSelectorTerm]
    all_nodes: bool
    consumes_counters: _containers.RepeatedCompositeFieldContainer[CounterConsumption]
    capacity_policies: _containers.MessageMap[str, CapacityRequestPolicy]
    def __init__(self, driver: _Optional[str] = ..., pool: _Optional[str] = ..., name: _Optional[str] = ..., attributes: _Optional[_Mapping[str, AttributeValue]] = ..., capacity: _Optional[_Mapping[str, str]] = ..., allow_multiple_allocations: _Optional[bool] = ..., taints: _Optional[_Iterable[_Union[Taint, _Mapping]]] = ..., node: _Optional[str] = ..., node_selector: _Optional[_Iterable[_Union[NodeSelectorTerm, _Mapping]]] = ..., all_nodes: _Optional[bool] = ..., consumes_counters: _Optional[_Iterable[_Union[CounterConsumption, _Mapping]]] = ..., capacity_policies: _Optional[_Mapping[str, CapacityRequestPolicy]] = ...) -> None: ...

class CapacityRequestPolicy(_message.Message):
    __slots__ = ("default", "valid_values", "valid_range")
    DEFAULT_FIELD_NUMBER: _ClassVar[int]
    VALID_VALUES_FIELD_NUMBER: _ClassVar[int]
    VALID_RANGE_FIELD_NUMBER: _ClassVar[int]
    default: str
    valid_values: _containers.RepeatedScalarFieldContainer[str]
    valid_range: CapacityRequestPolicyRange
    def __init__(self, default: _Optional[str] = ..., valid_values: _Optional[_Iterable[str]] = ..., valid_range: _Optional[_Union[CapacityRequestPolicyRange, _Mapping]] = ...) -> None: ...

class CapacityRequestPolicyRange(_message.Message):
    __slots__ = ("min", "max", "step")
    MIN_FIELD_NUMBER: _ClassVar[int]
    MAX_FIELD_NUMBER: _ClassVar[int]
    STEP_FIELD_NUMBER: _ClassVar[int]
    min: str
    max: str
    step: str
    def __init__(self, min: _Optional[str] = ..., max: _Optional[str] = ..., step: _Optional[str] = ...) -> None: ...

class CounterConsumption(_message.Message):
    __slots__ = ("counter_set", "counters")
    class CountersEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    COUNTER_SET_FIELD_NUMBER: _ClassVar[int]
    COUNTERS_FIELD_NUMBER: _ClassVar[int]
    counter_set: str
    counters: _containers.ScalarMap[str, str]
    def __init__(self, counter_set: _Optional[str] = ..., counters: _Optional[_Mapping[str, str]] = ...) -> None: ...

class CounterSet(_message.Message):
    __slots__ = ("driver", "pool", "name", "counters")
    class CountersEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    DRIVER_FIELD_NUMBER: _ClassVar[int]
    POOL_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    COUNTERS_FIELD_NUMBER: _ClassVar[int]
    driver: str
    pool: str
    name: str
    counters: _containers.ScalarMap[str, str]
    def __init__(self, driver: _Optional[str] = ..., pool: _Optional[str] = ..., name: _Optional[str] = ..., counters: _Optional[_Mapping[str, str]] = ...) -> None: ...

class DeviceClass(_message.Message):
    __slots__ = ("name", "selectors", "extended_resource_name", "creation_timestamp")
    NAME_FIELD_NUMBER: _ClassVar[int]
    SELECTORS_FIELD_NUMBER: _ClassVar[int]
    EXTENDED_RESOURCE_NAME_FIELD_NUMBER: _ClassVar[int]
    CREATION_TIMESTAMP_FIELD_NUMBER: _ClassVar[int]
    name: str
    selectors: _containers.RepeatedScalarFieldContainer[str]
    extended_resource_name: str
    creation_timestamp: str
    def __init__(self, name: _Optional[str] = ..., selectors: _Optional[_Iterable[str]] = ..., extended_resource_name: _Optional[str] = ..., creation_timestamp: _Optional[str] = ...) -> None: ...

class DeviceSubRequest(_message.Message):
    __slots__ = ("name", "device_class", "selectors", "all", "count", "tolerations", "capacity_requests", "admin_access")
    class CapacityRequestsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    NAME_FIELD_NUMBER: _ClassVar[int]
    DEVICE_CLASS_FIELD_NUMBER: _ClassVar[int]
    SELECTORS_FIELD_NUMBER: _ClassVar[int]
    ALL_FIELD_NUMBER: _ClassVar[int]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    TOLERATIONS_FIELD_NUMBER: _ClassVar[int]
    CAPACITY_REQUESTS_FIELD_NUMBER: _ClassVar[int]
    ADMIN_ACCESS_FIELD_NUMBER: _ClassVar[int]
    name: str
    device_class: str
    selectors: _containers.RepeatedScalarFieldContainer[str]
    all: bool
    count: int
    tolerations: _containers.RepeatedCompositeFieldContainer[Toleration]
    capacity_requests: _containers.ScalarMap[str, str]
    admin_access: bool
    def __init__(self, name: _Optional[str] = ..., device_class: _Optional[str] = ..., selectors: _Optional[_Iterable[str]] = ..., all: _Optional[bool] = ..., count: _Optional[int] = ..., tolerations: _Optional[_Iterable[_Union[Toleration, _Mapping]]] = ..., capacity_requests: _Optional[_Mapping[str, str]] = ..., admin_access: _Optional[bool] = ...) -> None: ...

class DeviceRequest(_message.Message):
    __slots__ = ("name", "exactly", "first_available")
    NAME_FIELD_NUMBER: _ClassVar[int]
    EXACTLY_FIELD_NUMBER: _ClassVar[int]
    FIRST_AVAILABLE_FIELD_NUMBER: _ClassVar[int]
    name: str
    exactly: DeviceSubRequest
    first_available: _containers.RepeatedCompositeFieldContainer[DeviceSubRequest]
    def __init__(self, name: _Optional[str] = ..., exactly: _Optional[_Union[DeviceSubRequest, _Mapping]] = ..., first_available: _Optional[_Iterable[_Union[DeviceSubRequest, _Mapping]]] = ...) -> None: ...

class DeviceConstraint(_message.Message):
    __slots__ = ("requests", "match_attribute", "distinct_attribute")
    REQUESTS_FIELD_NUMBER: _ClassVar[int]
    MATCH_ATTRIBUTE_FIELD_NUMBER: _ClassVar[int]
    DISTINCT_ATTRIBUTE_FIELD_NUMBER: _ClassVar[int]
    requests: _containers.RepeatedScalarFieldContainer[str]
    match_attribute: str
    distinct_attribute: str
    def __init__(self, requests: _Optional[_Iterable[str]] = ..., match_attribute: _Optional[str] = ..., distinct_attribute: _Optional[str] = ...) -> None: ...

class AllocatedDevice(_message.Message):
    __slots__ = ("request", "driver", "pool", "device", "share_id", "consumed_capacity", "admin_access")
    class ConsumedCapacityEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    REQUEST_FIELD_NUMBER: _ClassVar[int]
    DRIVER_FIELD_NUMBER: _ClassVar[int]
    POOL_FIELD_NUMBER: _ClassVar[int]
    DEVICE_FIELD_NUMBER: _ClassVar[int]
    SHARE_ID_FIELD_NUMBER: _ClassVar[int]
    CONSUMED_CAPACITY_FIELD_NUMBER: _ClassVar[int]
    ADMIN_ACCESS_FIELD_NUMBER: _ClassVar[int]
    request: str
    driver: str
    pool: str
    device: str
    share_id: str
    consumed_capacity: _containers.ScalarMap[str, str]
    admin_access: bool
    def __init__(self, request: _Optional[str] = ..., driver: _Optional[str] = ..., pool: _Optional[str] = ..., device: _Optional[str] = ..., share_id: _Optional[str] = ..., consumed_capacity: _Optional[_Mapping[str, str]] = ..., admin_access: _Optional[bool] = ...) -> None: ...

class ResourceClaim(_message.Message):
    __slots__ = ("namespace", "name", "requests", "constraints", "allocation", "allocation_nodes", "reserved_pods", "reserved_groups", "reserved_other")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    REQUESTS_FIELD_NUMBER: _ClassVar[int]
    CONSTRAINTS_FIELD_NUMBER: _ClassVar[int]
    ALLOCATION_FIELD_NUMBER: _ClassVar[int]
    ALLOCATION_NODES_FIELD_NUMBER: _ClassVar[int]
    RESERVED_PODS_FIELD_NUMBER: _ClassVar[int]
    RESERVED_GROUPS_FIELD_NUMBER: _ClassVar[int]
    RESERVED_OTHER_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    name: str
    requests: _containers.RepeatedCompositeFieldContainer[DeviceRequest]
    constraints: _containers.RepeatedCompositeFieldContainer[DeviceConstraint]
    allocation: _containers.RepeatedCompositeFieldContainer[AllocatedDevice]
    allocation_nodes: _containers.RepeatedCompositeFieldContainer[NodeSelectorTerm]
    reserved_pods: _containers.RepeatedScalarFieldContainer[str]
    reserved_groups: _containers.RepeatedScalarFieldContainer[str]
    reserved_other: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, namespace: _Optional[str] = ..., name: _Optional[str] = ..., requests: _Optional[_Iterable[_Union[DeviceRequest, _Mapping]]] = ..., constraints: _Optional[_Iterable[_Union[DeviceConstraint, _Mapping]]] = ..., allocation: _Optional[_Iterable[_Union[AllocatedDevice, _Mapping]]] = ..., allocation_nodes: _Optional[_Iterable[_Union[NodeSelectorTerm, _Mapping]]] = ..., reserved_pods: _Optional[_Iterable[str]] = ..., reserved_groups: _Optional[_Iterable[str]] = ..., reserved_other: _Optional[_Iterable[str]] = ...) -> None: ...

class GroupVerdict(_message.Message):
    __slots__ = ("name", "kind", "placed_pods", "running_pods", "min_count", "domain", "satisfied")
    class DomainEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    NAME_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    PLACED_PODS_FIELD_NUMBER: _ClassVar[int]
    RUNNING_PODS_FIELD_NUMBER: _ClassVar[int]
    MIN_COUNT_FIELD_NUMBER: _ClassVar[int]
    DOMAIN_FIELD_NUMBER: _ClassVar[int]
    SATISFIED_FIELD_NUMBER: _ClassVar[int]
    name: str
    kind: str
    placed_pods: int
    running_pods: int
    min_count: int
    domain: _containers.ScalarMap[str, str]
    satisfied: bool
    def __init__(self, name: _Optional[str] = ..., kind: _Optional[str] = ..., placed_pods: _Optional[int] = ..., running_pods: _Optional[int] = ..., min_count: _Optional[int] = ..., domain: _Optional[_Mapping[str, str]] = ..., satisfied: _Optional[bool] = ...) -> None: ...

class WorkloadVerdict(_message.Message):
    __slots__ = ("name", "kind", "priority", "satisfied", "reason", "groups", "proven", "would_take")
    NAME_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_FIELD_NUMBER: _ClassVar[int]
    SATISFIED_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    GROUPS_FIELD_NUMBER: _ClassVar[int]
    PROVEN_FIELD_NUMBER: _ClassVar[int]
    WOULD_TAKE_FIELD_NUMBER: _ClassVar[int]
    name: str
    kind: str
    priority: int
    satisfied: bool
    reason: str
    groups: _containers.RepeatedCompositeFieldContainer[GroupVerdict]
    proven: bool
    would_take: WouldTake
    def __init__(self, name: _Optional[str] = ..., kind: _Optional[str] = ..., priority: _Optional[int] = ..., satisfied: _Optional[bool] = ..., reason: _Optional[str] = ..., groups: _Optional[_Iterable[_Union[GroupVerdict, _Mapping]]] = ..., proven: _Optional[bool] = ..., would_take: _Optional[_Union[WouldTake, _Mapping]] = ...) -> None: ...

class BudgetNeed(_message.Message):
    __slots__ = ("budget", "allowed", "needed")
    BUDGET_FIELD_NUMBER: _ClassVar[int]
    ALLOWED_FIELD_NUMBER: _ClassVar[int]
    NEEDED_FIELD_NUMBER: _ClassVar[int]
    budget: str
    allowed: int
    needed: int
    def __init__(self, budget: _Optional[str] = ..., allowed: _Optional[int] = ..., needed: _Optional[int] = ...) -> None: ...

class WouldTake(_message.Message):
    __slots__ = ("violations_at_least", "budgets", "evictions", "proven")
    VIOLATIONS_AT_LEAST_FIELD_NUMBER: _ClassVar[int]
    BUDGETS_FIELD_NUMBER: _ClassVar[int]
    EVICTIONS_FIELD_NUMBER: _ClassVar[int]
    PROVEN_FIELD_NUMBER: _ClassVar[int]
    violations_at_least: int
    budgets: _containers.RepeatedCompositeFieldContainer[BudgetNeed]
    evictions: int
    proven: bool
    def __init__(self, violations_at_least: _Optional[int] = ..., budgets: _Optional[_Iterable[_Union[BudgetNeed, _Mapping]]] = ..., evictions: _Optional[int] = ..., proven: _Optional[bool] = ...) -> None: ...

class ExplainResponse(_message.Message):
    __slots__ = ("workload", "satisfied", "satisfied_soft", "budgets", "evictions", "proven", "reason", "min_count", "largest_min_count", "larger", "larger_omitted", "request_id")
    WORKLOAD_FIELD_NUMBER: _ClassVar[int]
    SATISFIED_FIELD_NUMBER: _ClassVar[int]
    SATISFIED_SOFT_FIELD_NUMBER: _ClassVar[int]
    BUDGETS_FIELD_NUMBER: _ClassVar[int]
    EVICTIONS_FIELD_NUMBER: _ClassVar[int]
    PROVEN_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    MIN_COUNT_FIELD_NUMBER: _ClassVar[int]
    LARGEST_MIN_COUNT_FIELD_NUMBER: _ClassVar[int]
    LARGER_FIELD_NUMBER: _ClassVar[int]
    LARGER_OMITTED_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    workload: str
    satisfied: bool
    satisfied_soft: bool
    budgets: _containers.RepeatedCompositeFieldContainer[BudgetNeed]
    evictions: _containers.RepeatedScalarFieldContainer[str]
    proven: bool
    reason: str
    min_count: int
    largest_min_count: int
    larger: _containers.RepeatedCompositeFieldContainer[GangSize]
    larger_omitted: int
    request_id: str
    def __init__(self, workload: _Optional[str] = ..., satisfied: _Optional[bool] = ..., satisfied_soft: _Optional[bool] = ..., budgets: _Optional[_Iterable[_Union[BudgetNeed, _Mapping]]] = ..., evictions: _Optional[_Iterable[str]] = ..., proven: _Optional[bool] = ..., reason: _Optional[str] = ..., min_count: _Optional[int] = ..., largest_min_count: _Optional[int] = ..., larger: _Optional[_Iterable[_Union[GangSize, _Mapping]]] = ..., larger_omitted: _Optional[int] = ..., request_id: _Optional[str] = ...) -> None: ...

class GangSize(_message.Message):
    __slots__ = ("min_count", "satisfied", "proven", "reason", "budgets", "evictions")
    MIN_COUNT_FIELD_NUMBER: _ClassVar[int]
    SATISFIED_FIELD_NUMBER: _ClassVar[int]
    PROVEN_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    BUDGETS_FIELD_NUMBER: _ClassVar[int]
    EVICTIONS_FIELD_NUMBER: _ClassVar[int]
    min_count: int
    satisfied: bool
    proven: bool
    reason: str
    budgets: _containers.RepeatedCompositeFieldContainer[BudgetNeed]
    evictions: int
    def __init__(self, min_count: _Optional[int] = ..., satisfied: _Optional[bool] = ..., proven: _Optional[bool] = ..., reason: _Optional[str] = ..., budgets: _Optional[_Iterable[_Union[BudgetNeed, _Mapping]]] = ..., evictions: _Optional[int] = ...) -> None: ...

class Binding(_message.Message):
    __slots__ = ("pod", "node")
    POD_FIELD_NUMBER: _ClassVar[int]
    NODE_FIELD_NUMBER: _ClassVar[int]
    pod: str
    node: str
    def __init__(self, pod: _Optional[str] = ..., node: _Optional[str] = ...) -> None: ...

class Eviction(_message.Message):
    __slots__ = ("pod", "node", "cost", "group")
    POD_FIELD_NUMBER: _ClassVar[int]
    NODE_FIELD_NUMBER: _ClassVar[int]
    COST_FIELD_NUMBER: _ClassVar[int]
    GROUP_FIELD_NUMBER: _ClassVar[int]
    pod: str
    node: str
    cost: float
    group: str
    def __init__(self, pod: _Optional[str] = ..., node: _Optional[str] = ..., cost: _Optional[float] = ..., group: _Optional[str] = ...) -> None: ...

class PlanDevice(_message.Message):
    __slots__ = ("driver", "pool", "device", "share_id", "consumed_capacity", "admin_access")
    class ConsumedCapacityEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    DRIVER_FIELD_NUMBER: _ClassVar[int]
    POOL_FIELD_NUMBER: _ClassVar[int]
    DEVICE_FIELD_NUMBER: _ClassVar[int]
    SHARE_ID_FIELD_NUMBER: _ClassVar[int]
    CONSUMED_CAPACITY_FIELD_NUMBER: _ClassVar[int]
    ADMIN_ACCESS_FIELD_NUMBER: _ClassVar[int]
    driver: str
    pool: str
    device: str
    share_id: str
    consumed_capacity: _containers.ScalarMap[str, str]
    admin_access: bool
    def __init__(self, driver: _Optional[str] = ..., pool: _Optional[str] = ..., device: _Optional[str] = ..., share_id: _Optional[str] = ..., consumed_capacity: _Optional[_Mapping[str, str]] = ..., admin_access: _Optional[bool] = ...) -> None: ...

class DeviceAllocation(_message.Message):
    __slots__ = ("pod", "pod_group", "claim", "request", "devices")
    POD_FIELD_NUMBER: _ClassVar[int]
    POD_GROUP_FIELD_NUMBER: _ClassVar[int]
    CLAIM_FIELD_NUMBER: _ClassVar[int]
    REQUEST_FIELD_NUMBER: _ClassVar[int]
    DEVICES_FIELD_NUMBER: _ClassVar[int]
    pod: str
    pod_group: str
    claim: str
    request: str
    devices: _containers.RepeatedCompositeFieldContainer[PlanDevice]
    def __init__(self, pod: _Optional[str] = ..., pod_group: _Optional[str] = ..., claim: _Optional[str] = ..., request: _Optional[str] = ..., devices: _Optional[_Iterable[_Union[PlanDevice, _Mapping]]] = ...) -> None: ...

class Objective(_message.Message):
    __slots__ = ("satisfied_workloads", "satisfied_by_priority", "placed_pods", "pdb_violations", "preemption_cost", "evicted_pods", "preemption_cost_bound", "gap", "first_available", "satisfied_bound", "satisfied_by_priority_bound", "placed_bound", "pdb_violations_bound", "evicted_pods_bound", "first_available_bound", "gap_tier")
    class SatisfiedByPriorityEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: int
        value: int
        def __init__(self, key: _Optional[int] = ..., value: _Optional[int] = ...) -> None: ...
    class SatisfiedByPriorityBoundEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: int
        value: int
        def __init__(self, key: _Optional[int] = ..., value: _Optional[int] = ...) -> None: ...
    SATISFIED_WORKLOADS_FIELD_NUMBER: _ClassVar[int]
    SATISFIED_BY_PRIORITY_FIELD_NUMBER: _ClassVar[int]
    PLACED_PODS_FIELD_NUMBER: _ClassVar[int]
    PDB_VIOLATIONS_FIELD_NUMBER: _ClassVar[int]
    PREEMPTION_COST_FIELD_NUMBER: _ClassVar[int]
    EVICTED_PODS_FIELD_NUMBER: _ClassVar[int]
    PREEMPTION_COST_BOUND_FIELD_NUMBER: _ClassVar[int]
    GAP_FIELD_NUMBER: _ClassVar[int]
    FIRST_AVAILABLE_FIELD_NUMBER: _ClassVar[int]
    SATISFIED_BOUND_FIELD_NUMBER: _ClassVar[int]
    SATISFIED_BY_PRIORITY_BOUND_FIELD_NUMBER: _ClassVar[int]
    PLACED_BOUND_FIELD_NUMBER: _ClassVar[int]
    PDB_VIOLATIONS_BOUND_FIELD_NUMBER: _ClassVar[int]
    EVICTED_PODS_BOUND_FIELD_NUMBER: _ClassVar[int]
    FIRST_AVAILABLE_BOUND_FIELD_NUMBER: _ClassVar[int]
    GAP_TIER_FIELD_NUMBER: _ClassVar[int]
    satisfied_workloads: int
    satisfied_by_priority: _containers.ScalarMap[int, int]
    placed_pods: int
    pdb_violations: int
    preemption_cost: float
    evicted_pods: int
    preemption_cost_bound: float
    gap: float
    first_available: int
    satisfied_bound: int
    satisfied_by_priority_bound: _containers.ScalarMap[int, int]
    placed_bound: int
    pdb_violations_bound: int
    evicted_pods_bound: int
    first_available_bound: int
    gap_tier: str
    def __init__(self, satisfied_workloads: _Optional[int] = ..., satisfied_by_priority: _Optional[_Mapping[int, int]] = ..., placed_pods: _Optional[int] = ..., pdb_violations: _Optional[int] = ..., preemption_cost: _Optional[float] = ..., evicted_pods: _Optional[int] = ..., preemption_cost_bound: _Optional[float] = ..., gap: _Optional[float] = ..., first_available: _Optional[int] = ..., satisfied_bound: _Optional[int] = ..., satisfied_by_priority_bound: _Optional[_Mapping[int, int]] = ..., placed_bound: _Optional[int] = ..., pdb_violations_bound: _Optional[int] = ..., evicted_pods_bound: _Optional[int] = ..., first_available_bound: _Optional[int] = ..., gap_tier: _Optional[str] = ...) -> None: ...

class Plan(_message.Message):
    __slots__ = ("status", "workloads", "bindings", "evictions", "device_allocations", "objective", "stats", "held_pods", "warnings")
    STATUS_FIELD_NUMBER: _ClassVar[int]
    WORKLOADS_FIELD_NUMBER: _ClassVar[int]
    BINDINGS_FIELD_NUMBER: _ClassVar[int]
    EVICTIONS_FIELD_NUMBER: _ClassVar[int]
    DEVICE_ALLOCATIONS_FIELD_NUMBER: _ClassVar[int]
    OBJECTIVE_FIELD_NUMBER: _ClassVar[int]
    STATS_FIELD_NUMBER: _ClassVar[int]
    HELD_PODS_FIELD_NUMBER: _ClassVar[int]
    WARNINGS_FIELD_NUMBER: _ClassVar[int]
    status: PlanStatus
    workloads: _containers.RepeatedCompositeFieldContainer[WorkloadVerdict]
    bindings: _containers.RepeatedCompositeFieldContainer[Binding]
    evictions: _containers.RepeatedCompositeFieldContainer[Eviction]
    device_allocations: _containers.RepeatedCompositeFieldContainer[DeviceAllocation]
    objective: Objective
    stats: _struct_pb2.Struct
    held_pods: _containers.RepeatedCompositeFieldContainer[HeldPod]
    warnings: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, status: _Optional[_Union[PlanStatus, str]] = ..., workloads: _Optional[_Iterable[_Union[WorkloadVerdict, _Mapping]]] = ..., bindings: _Optional[_Iterable[_Union[Binding, _Mapping]]] = ..., evictions: _Optional[_Iterable[_Union[Eviction, _Mapping]]] = ..., device_allocations: _Optional[_Iterable[_Union[DeviceAllocation, _Mapping]]] = ..., objective: _Optional[_Union[Objective, _Mapping]] = ..., stats: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., held_pods: _Optional[_Iterable[_Union[HeldPod, _Mapping]]] = ..., warnings: _Optional[_Iterable[str]] = ...) -> None: ...

class HeldPod(_message.Message):
    __slots__ = ("pod", "reason")
    POD_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    pod: str
    reason: str
    def __init__(self, pod: _Optional[str] = ..., reason: _Optional[str] = ...) -> None: ...

class SolveResponse(_message.Message):
    __slots__ = ("plan", "request_id")
    PLAN_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    plan: Plan
    request_id: str
    def __init__(self, plan: _Optional[_Union[Plan, _Mapping]] = ..., request_id: _Optional[str] = ...) -> None: ...

class Progress(_message.Message):
    __slots__ = ("stage", "objective", "bound", "seconds", "tiers", "tier_bounds")
    class TiersEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: float
        def __init__(self, key: _Optional[str] = ..., value: _Optional[float] = ...) -> None: ...
    class TierBoundsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: float
        def __init__(self, key: _Optional[str] = ..., value: _Optional[float] = ...) -> None: ...
    STAGE_FIELD_NUMBER: _ClassVar[int]
    OBJECTIVE_FIELD_NUMBER: _ClassVar[int]
    BOUND_FIELD_NUMBER: _ClassVar[int]
    SECONDS_FIELD_NUMBER: _ClassVar[int]
    TIERS_FIELD_NUMBER: _ClassVar[int]
    TIER_BOUNDS_FIELD_NUMBER: _ClassVar[int]
    stage: str
    objective: float
    bound: float
    seconds: float
    tiers: _containers.ScalarMap[str, float]
    tier_bounds: _containers.ScalarMap[str, float]
    def __init__(self, stage: _Optional[str] = ..., objective: _Optional[float] = ..., bound: _Optional[float] = ..., seconds: _Optional[float] = ..., tiers: _Optional[_Mapping[str, float]] = ..., tier_bounds: _Optional[_Mapping[str, float]] = ...) -> None: ...

class SolveEvent(_message.Message):
    __slots__ = ("progress", "result")
    PROGRESS_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    progress: Progress
    result: SolveResponse
    def __init__(self, progress: _Optional[_Union[Progress, _Mapping]] = ..., result: _Optional[_Union[SolveResponse, _Mapping]] = ...) -> None: ...
