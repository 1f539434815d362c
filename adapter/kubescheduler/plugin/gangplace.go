// Package plugin is gangplace inside kube-scheduler 1.37 (issue 49): a plugin on the PodGroup
// extension points that takes gangplace's plan from an advisor (`gangplace adapter --advise`)
// and falls back to upstream's behaviour whenever there is no advice in time.
//
//   - PreFilter: a planned pod is restricted to its planned node; any other pod, or a pod the
//     advisor does not answer for within the deadline, keeps every node (upstream's own filters
//     decide, as without the plugin).
//
//   - PlacementGenerate (TopologyAwareWorkloadScheduling): the plan's nodes for the group as the
//     first placement, then upstream's TopologyPlacementGenerator's placements (a profile takes one
//     generator, so this one replaces it and returns what it would besides).
//
//   - PlacementScore: the plan's placement scores MaxScore, every other 0, so upstream's scorers
//     rank those as they would.
//
//   - PodGroupPostFilter: the plan's victims are evicted (the Eviction API under the strict PDB
//     policy, a delete under soft) and its pods nominated to their planned nodes; without advice
//     it answers Unschedulable, so the next plugin (DefaultPreemption) preempts as upstream does.
//
//   - PreEnqueue: a pod of a PodGroup the advisor's current plan has not considered yet waits in
//     the queue (never in a cycle) until the next plan considers it, at most holdMilliseconds.
//
// A scheduling cycle never waits on a solve: Advise answers from the advisor's current plan,
// each call is bounded by the plugin's deadline (timeoutMilliseconds), and a plan the cluster has
// been ahead of for longer than maxPlanAgeMilliseconds is no advice. Every answer is counted in
// gangplace_advice_total{extension_point,result} on kube-scheduler's /metrics.
package plugin

import (
	"cmp"
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/feature"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/noderesources"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/topologyaware"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"

	pb "gangplace.local/kubescheduler/gangplacev1"
)

// Name is the plugin's name in a KubeSchedulerConfiguration profile.
const Name = "Gangplace"

// PlannedPlacement names the placement made of the plan's nodes.
const PlannedPlacement = "gangplace"

// Defaults for the args left 0.
const (
	DefaultTimeout    = 50 * time.Millisecond
	DefaultHold       = 2 * time.Second
	DefaultMaxPlanAge = 10 * time.Second
)

// Args are the plugin's pluginConfig args.
type Args struct {
	// Address of the advisor (`gangplace adapter --advise HOST:PORT`).
	Address string `json:"address"`
	// TimeoutMilliseconds bounds each Advise call (50 when 0): past it, upstream's behaviour.
	TimeoutMilliseconds int `json:"timeoutMilliseconds"`
	// PdbPolicy is the policy the advisor plans with: "strict" (the default) evicts through the
	// Eviction API, "soft" deletes victims as DefaultPreemption does.
	PdbPolicy string `json:"pdbPolicy"`
	// HoldMilliseconds: how long a PodGroup's pods may wait in the queue for a plan that
	// considers them (2000 when 0; negative: never held).
	HoldMilliseconds int `json:"holdMilliseconds"`
	// MaxPlanAgeMilliseconds: a plan the cluster has been ahead of for longer is no advice (10000
	// when 0). The advisor replans on every change, so only a slow or failing solve ages a plan.
	MaxPlanAgeMilliseconds int `json:"maxPlanAgeMilliseconds"`
	// TLS to the advisor (plaintext when empty) and a bearer token file read on every call.
	TLS       TLSArgs `json:"tls"`
	TokenFile string  `json:"tokenFile"`
}

// TLSArgs reach an advisor serving TLS (`--advise-tls-cert`): the CA to trust, a client
// certificate and key for mutual TLS, and the name to verify (the address's host when empty).
type TLSArgs struct {
	CAFile     string `json:"caFile"`
	CertFile   string `json:"certFile"`
	KeyFile    string `json:"keyFile"`
	ServerName string `json:"serverName"`
}

// Advisor is the one call the plugin makes (a gRPC client in production, a fake in tests).
type Advisor interface {
	Advise(ctx context.Context, in *pb.AdviseRequest, opts ...grpc.CallOption) (*pb.AdviseResponse, error)
}

// Evictor removes a victim; the plugin's own under the PDB policy, a fake in tests.
type Evictor func(ctx context.Context, namespace, name string) error

// Activator moves held pods back to the scheduling queue (the framework's PodActivator).
type Activator func(pods map[string]*v1.Pod)

// Gangplace is the plugin.
type Gangplace struct {
	args     Args
	timeout  time.Duration
	maxAge   time.Duration
	advisor  Advisor
	evict    Evictor
	upstream fwk.PlacementGeneratePlugin // TopologyPlacementGenerator, for what it would return
	holds    *holds                      // PreEnqueue's held groups
	// The probe's verdict (“probe“): whether the advisor is healthy, and the result a question
	// would have while it is not. While probing, an unhealthy advisor is not asked at all.
	probing   atomic.Bool
	healthy   atomic.Bool
	unhealthy atomic.Value   // string: ResultUnavailable, ResultStale or ResultNotPlanned
	evicting  sync.WaitGroup // PodGroupPostFilter's evictions under way
	mu        sync.Mutex
	refused   map[string]time.Time                  // workload -> when a victim of its plan was refused
	answers   map[string]cached                     // answers (nil: no advice) by "Kind/ns/name", adviceTTL long
	fitOpts   noderesources.ResourceRequestsOptions // as kube-scheduler's NodeResourcesFit reads requests
}

var (
	_ fwk.PreEnqueuePlugin         = &Gangplace{}
	_ fwk.PreFilterPlugin          = &Gangplace{}
	_ fwk.PlacementGeneratePlugin  = &Gangplace{}
	_ fwk.PlacementScorePlugin     = &Gangplace{}
	_ fwk.PodGroupPostFilterPlugin = &Gangplace{}
)

// New is the plugin's factory (frameworkruntime.PluginFactory).
func New(ctx context.Context, obj runtime.Object, h fwk.Handle) (fwk.Plugin, error) {
	args := Args{}
	if err := frameworkruntime.DecodeInto(obj, &args); err != nil {
		return nil, fmt.Errorf("%s args: %w", Name, err)
	}
	if args.Address == "" {
		return nil, fmt.Errorf("%s args: address: the advisor's HOST:PORT is required", Name)
	}
	conn, err := Dial(args)
	if err != nil {
		return nil, err
	}
	features := feature.NewSchedulerFeaturesFromGates(utilfeature.DefaultFeatureGate)
	upstream, err := topologyaware.New(ctx, nil, h, features)
	if err != nil {
		return nil, err
	}
	g, err := NewWith(args, pb.NewPlacementServiceClient(conn), clientEvictor(h, args.PdbPolicy), upstream)
	if err != nil {
		return nil, err
	}
	g.fitOpts = noderesources.ResourceRequestsOptions{EnablePodLevelResources: features.EnablePodLevelResources}
	g.holds.activate = func(pods map[string]*v1.Pod) { h.Activate(klog.FromContext(ctx), pods) }
	g.startProbing(ctx)
	return g, nil
}

// NewWith builds the plugin from its parts.
func NewWith(args Args, advisor Advisor, evict Evictor, upstream fwk.PlacementGeneratePlugin) (*Gangplace, error) {
	switch args.PdbPolicy {
	case "":
		args.PdbPolicy = "strict"
	case "strict", "soft":
	default:
		return nil, fmt.Errorf("%s args: pdbPolicy: strict or soft, got %q", Name, args.PdbPolicy)
	}
	g := &Gangplace{args: args, timeout: orDefault(args.TimeoutMilliseconds, DefaultTimeout),
		maxAge: orDefault(args.MaxPlanAgeMilliseconds, DefaultMaxPlanAge), advisor: advisor, evict: evict,
		upstream: upstream, refused: map[string]time.Time{}, answers: map[string]cached{}}
	hold := orDefault(args.HoldMilliseconds, DefaultHold)
	if args.HoldMilliseconds < 0 {
		hold = 0
	}
	g.holds = newHolds(g, hold)
	return g, nil
}

func orDefault(ms int, otherwise time.Duration) time.Duration {
	if ms > 0 {
		return time.Duration(ms) * time.Millisecond
	}
	return otherwise
}

func clientEvictor(h fwk.Handle, policy string) Evictor {
	return func(ctx context.Context, namespace, name string) error {
		if policy == "soft" {
			return h.ClientSet().CoreV1().Pods(namespace).Delete(ctx, name, metav1.DeleteOptions{})
		}
		return h.ClientSet().PolicyV1().Evictions(namespace).Evict(ctx, &policyv1.Eviction{
			ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}})
	}
}

// Name returns the plugin's name.
func (g *Gangplace) Name() string { return Name }

// ask is one Advise call within the deadline: the answer, or the error (and its count).
func (g *Gangplace) ask(ctx context.Context, point, kind, namespace, name string) (*pb.AdviseResponse, error) {
	ctx, cancel := context.WithTimeout(ctx, g.timeout)
	defer cancel()
	start := time.Now()
	answer, err := g.advisor.Advise(ctx, &pb.AdviseRequest{Kind: kind, Namespace: namespace, Name: name})
	adviseSeconds.WithLabelValues(point).Observe(time.Since(start).Seconds())
	if err != nil {
		count(point, ResultUnavailable)
		klog.FromContext(ctx).V(2).Info("gangplace: no advice in time, upstream's behaviour", "point", point,
			"workload", kind+"/"+namespace+"/"+name, "err", err)
	}
	return answer, err
}

// stale is whether the cluster has been ahead of the answer's plan for longer than allowed.
func (g *Gangplace) stale(answer *pb.AdviseResponse) bool {
	return time.Duration(answer.GetAgeSeconds()*float64(time.Second)) > g.maxAge
}

// adviceTTL: an answer serves the other questions about its workload (each of its pods'
// PreFilter, each placement's, the PodGroupPostFilter) for this long, so a PodGroup cycle asks
// the advisor about once and waits out the deadline at most once. No advice (not planned, a
// stale plan, no answer in time) is remembered too: the cycle stays upstream's throughout.
const adviceTTL = 500 * time.Millisecond

type cached struct {
	answer *pb.AdviseResponse // nil: no advice
	at     time.Time
}

// remembered is the answer for the first of “keys“ answered less than adviceTTL ago (nil: no
// advice), and whether there is one.
func (g *Gangplace) remembered(keys []string) (*pb.AdviseResponse, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, key := range keys {
		if c, ok := g.answers[key]; ok && time.Since(c.at) <= adviceTTL {
			return c.answer, true
		}
	}
	return nil, false
}

// remember keeps an answer (nil: no advice) under the keys asked and, when planned, under each
// of its pods.
func (g *Gangplace) remember(keys []string, answer *pb.AdviseResponse) {
	now := time.Now()
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.answers) > 10000 {
		for k, c := range g.answers {
			if now.Sub(c.at) > adviceTTL {
				delete(g.answers, k)
			}
		}
	}
	for _, key := range keys {
		g.answers[key] = cached{answer, now}
	}
	for _, b := range answer.GetBindings() {
		g.answers["Pod/"+b.GetPod()] = cached{answer, now}
	}
}

// advise is the advice for one workload, or nil: not planned, a stale plan, no answer within the
// deadline, or an advisor the probe finds unhealthy (not asked); each counted by its result.
// “also“: more keys the same answer serves (a pod's PodGroup).
func (g *Gangplace) advise(ctx context.Context, point, kind, namespace, name string, also ...string) *pb.AdviseResponse {
	keys := append([]string{kind + "/" + namespace + "/" + name}, also...)
	if answer, ok := g.remembered(keys); ok {
		return answer
	}
	answer := g.fresh(ctx, point, kind, namespace, name)
	g.remember(keys, answer)
	return answer
}

// fresh asks the advisor (when healthy) and judges the answer.
func (g *Gangplace) fresh(ctx context.Context, point, kind, namespace, name string) *pb.AdviseResponse {
	if g.probing.Load() && !g.healthy.Load() {
		result, _ := g.unhealthy.Load().(string)
		count(point, cmp.Or(result, ResultUnavailable))
		return nil
	}
	answer, err := g.ask(ctx, point, kind, namespace, name)
	switch {
	case err != nil:
		return nil
	case g.stale(answer):
		count(point, ResultStale)
		klog.FromContext(ctx).V(2).Info("gangplace: the plan is stale, upstream's behaviour", "point", point,
			"workload", kind+"/"+namespace+"/"+name, "ageSeconds", answer.GetAgeSeconds())
		return nil
	case !answer.GetPlanned():
		count(point, ResultNotPlanned)
		klog.FromContext(ctx).V(4).Info("gangplace: not planned, upstream's behaviour", "point", point,
			"workload", kind+"/"+namespace+"/"+name, "reason", answer.GetReason())
		return nil
	}
	return answer
}

// probeOnce asks the advisor once and records whether it is healthy: it answers within the
// deadline, it has a plan, and the cluster has not been ahead of that plan for too long.
func (g *Gangplace) probeOnce(ctx context.Context) bool {
	answer, err := g.ask(ctx, PointProbe, "Pod", "", probeName)
	result := ""
	switch {
	case err != nil:
		result = ResultUnavailable
	case answer.GetStatus() == "":
		result = ResultNotPlanned // no plan yet
	case g.stale(answer):
		result = ResultStale
	}
	healthy := result == ""
	g.unhealthy.Store(result)
	if healthy {
		advisorHealthy.Set(1)
	} else {
		advisorHealthy.Set(0)
	}
	if g.healthy.Swap(healthy) != healthy {
		klog.FromContext(ctx).Info("gangplace: the advisor's health changed", "healthy", healthy,
			"err", err, "ageSeconds", answer.GetAgeSeconds())
	}
	return healthy
}

// startProbing asks once before it returns, so that kube-scheduler's first cycles (which start
// once its informers have synced, moments after the plugins are made) find the advisor's health
// known instead of "not probed yet, unavailable", then probes in the background. The one question
// is bounded by the deadline, like every other; it is not in a scheduling cycle.
func (g *Gangplace) startProbing(ctx context.Context) {
	g.probing.Store(true)
	g.probeOnce(ctx)
	go g.probe(ctx)
}

// probe runs probeOnce every probeInterval until ctx ends.
func (g *Gangplace) probe(ctx context.Context) {
	ticker := time.NewTicker(probeInterval)
	defer ticker.Stop()
	for {
		g.probeOnce(ctx)
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
	}
}

func groupKind(pg fwk.PodGroupInfo) string {
	if pg.GetType() == fwk.CompositePodGroupKeyType {
		return "CompositePodGroup"
	}
	return "PodGroup"
}

// ---- PreFilter ---------------------------------------------------------------------------------

// PreFilter restricts a planned pod to its planned node, when the pod fits there in the cycle's
// snapshot with the plan's victims on that node gone. A planned node that is gone, or that others
// have taken since the plan was made (the plan trails the cluster by a replan), is no advice for
// this pod: upstream's filters choose among every node, as they would without the plugin,
// instead of a cycle that fails on its one node and backs off.
func (g *Gangplace) PreFilter(ctx context.Context, _ fwk.CycleState, pod *v1.Pod, nodes []fwk.NodeInfo) (*fwk.PreFilterResult, *fwk.Status) {
	var also []string
	if sg := pod.Spec.SchedulingGroup; sg != nil && sg.PodGroupName != nil {
		also = append(also, "PodGroup/"+pod.Namespace+"/"+*sg.PodGroupName)
	}
	answer := g.advise(ctx, PointPreFilter, "Pod", pod.Namespace, pod.Name, also...)
	if answer == nil {
		return nil, nil
	}
	key := pod.Namespace + "/" + pod.Name
	for _, b := range answer.GetBindings() {
		if b.GetPod() != key {
			continue
		}
		for _, n := range nodes {
			if n.Node() == nil || n.Node().Name != b.GetNode() {
				continue
			}
			if !g.fits([]*v1.Pod{pod}, n, victimsOn(answer, b.GetNode())) {
				count(PointPreFilter, ResultTaken)
				klog.FromContext(ctx).V(2).Info("gangplace: the planned node has no room for the pod now, upstream's behaviour",
					"pod", klog.KObj(pod), "node", b.GetNode())
				return nil, nil
			}
			count(PointPreFilter, ResultPlanned)
			return &fwk.PreFilterResult{NodeNames: sets.New(b.GetNode())}, nil
		}
		count(PointPreFilter, ResultNodeGone) // the planned node is gone: upstream's choice
		klog.FromContext(ctx).V(2).Info("gangplace: the planned node is gone, upstream's behaviour", "pod",
			klog.KObj(pod), "node", b.GetNode())
		return nil, nil
	}
	count(PointPreFilter, ResultNotPlanned)
	return nil, nil
}

// victimsOn is the answer's victims on one node, "ns/name".
func victimsOn(answer *pb.AdviseResponse, node string) sets.Set[string] {
	out := sets.New[string]()
	for _, e := range answer.GetEvictions() {
		if e.GetNode() == node {
			out.Insert(e.GetPod())
		}
	}
	return out
}

// fits is whether the pods, together, fit in what the node has left in the cycle's snapshot
// (assumed pods included), “victims“ on it counted gone: upstream's NodeResourcesFit test
// (noderesources.Fits: the pod count, cpu, memory, ephemeral storage, extended resources) on a
// copy of the node without the victims, each pod added before the next is tested. Only a
// check that the advice is still current; kube-scheduler's own filters decide the placement.
func (g *Gangplace) fits(pods []*v1.Pod, node fwk.NodeInfo, victims sets.Set[string]) bool {
	left := node.Snapshot()
	for _, p := range node.GetPods() {
		if victims.Has(p.GetPod().Namespace + "/" + p.GetPod().Name) {
			if err := left.RemovePod(klog.Background(), p.GetPod()); err != nil {
				return false
			}
		}
	}
	for _, pod := range pods {
		if len(noderesources.Fits(pod, left, nil, g.fitOpts)) > 0 {
			return false
		}
		info, err := framework.NewPodInfo(pod)
		if err != nil {
			return false
		}
		left.AddPodInfo(info)
	}
	return true
}

// PreFilterExtensions returns nil: the plugin keeps no state to update.
func (g *Gangplace) PreFilterExtensions() fwk.PreFilterExtensions { return nil }

// ---- PlacementGenerate and PlacementScore ------------------------------------------------------

// GeneratePlacements puts the plan's nodes first, then what upstream's generator gives.
func (g *Gangplace) GeneratePlacements(ctx context.Context, state fwk.PodGroupCycleState, pg fwk.PodGroupInfo, parent *fwk.Placement) (*fwk.GeneratePlacementsResult, *fwk.Status) {
	result := &fwk.GeneratePlacementsResult{Placements: []*fwk.Placement{parent}}
	if g.upstream != nil {
		var status *fwk.Status
		result, status = g.upstream.GeneratePlacements(ctx, state, pg, parent)
		if !status.IsSuccess() {
			return result, status
		}
	}
	answer := g.advise(ctx, PointPlacementGenerate, groupKind(pg), pg.GetNamespace(), pg.GetName())
	if answer == nil {
		return result, nil
	}
	want := sets.New[string]()
	for _, b := range answer.GetBindings() {
		want.Insert(b.GetNode())
	}
	planned := &fwk.Placement{Name: PlannedPlacement}
	for _, n := range parent.Nodes {
		if n.Node() != nil && want.Has(n.Node().Name) {
			planned.Nodes = append(planned.Nodes, n)
		}
	}
	if len(planned.Nodes) != want.Len() { // a planned node is not in the parent placement: no advice
		count(PointPlacementGenerate, ResultNodeGone)
		return result, nil
	}
	if pods := pg.GetUnscheduledPods(); len(pods) > 0 {
		// a PodGroup whose pods kube-scheduler hands over: the plan's placement alone when each
		// planned pod still fits where it is planned, else upstream's placements alone (its pods
		// keep the nodes they still fit, PreFilter)
		if !g.plannedFits(pods, answer, planned.Nodes) {
			count(PointPlacementGenerate, ResultTaken)
			return result, nil
		}
		count(PointPlacementGenerate, ResultPlanned)
		return &fwk.GeneratePlacementsResult{Placements: []*fwk.Placement{planned}}, nil
	}
	count(PointPlacementGenerate, ResultPlanned)
	return &fwk.GeneratePlacementsResult{Placements: append([]*fwk.Placement{planned}, result.Placements...)}, nil
}

// plannedFits is whether every pod of “pods“ the answer places fits, with the others planned on
// the same node, where it is planned (the plan's victims there counted gone).
func (g *Gangplace) plannedFits(pods []*v1.Pod, answer *pb.AdviseResponse, nodes []fwk.NodeInfo) bool {
	node := map[string]string{}
	for _, b := range answer.GetBindings() {
		node[b.GetPod()] = b.GetNode()
	}
	on := map[string][]*v1.Pod{}
	for _, p := range pods {
		if n, ok := node[p.Namespace+"/"+p.Name]; ok {
			on[n] = append(on[n], p)
		}
	}
	for _, n := range nodes {
		if planned := on[n.Node().Name]; len(planned) > 0 && !g.fits(planned, n, victimsOn(answer, n.Node().Name)) {
			return false
		}
	}
	return true
}

// ScorePlacement ranks the plan's placement first.
func (g *Gangplace) ScorePlacement(_ context.Context, _ fwk.PlacementCycleState, _ fwk.PodGroupInfo, placement *fwk.PodGroupAssignments) (int64, *fwk.Status) {
	if placement != nil && placement.Placement != nil && placement.Name == PlannedPlacement {
		return fwk.MaxScore, nil
	}
	return fwk.MinScore, nil
}

// PlacementScoreExtensions returns nil: the scores are in range already.
func (g *Gangplace) PlacementScoreExtensions() fwk.PlacementScoreExtensions { return nil }

// ---- PodGroupPostFilter ------------------------------------------------------------------------

// PodGroupPostFilter nominates the plan's pods to their planned nodes and evicts its victims
// asynchronously, as DefaultPreemption's async preemption does, so the cycle never waits on the
// API server. A victim the Eviction API (or the delete) refuses leaves the workload to
// DefaultPreemption for refusedFor: its next PodGroupPostFilter answers Unschedulable.
func (g *Gangplace) PodGroupPostFilter(ctx context.Context, _ fwk.PodGroupCycleState, pg fwk.PodGroupInfo, _ fwk.PodGroupSchedulingFunc) (*fwk.PodGroupPostFilterResult, *fwk.Status) {
	workload := groupKind(pg) + "/" + pg.GetNamespace() + "/" + pg.GetName()
	if g.refusedLately(workload) {
		count(PointPodGroupPostFilter, ResultEvictionRefused)
		return nil, fwk.NewStatus(fwk.Unschedulable, "gangplace: a victim of the plan was refused lately")
	}
	answer := g.advise(ctx, PointPodGroupPostFilter, groupKind(pg), pg.GetNamespace(), pg.GetName())
	if answer == nil {
		return nil, fwk.NewStatus(fwk.Unschedulable, "gangplace: no plan for the pod group")
	}
	victims := make([]types.NamespacedName, 0, len(answer.GetEvictions()))
	for _, e := range answer.GetEvictions() {
		namespace, name, ok := splitKey(e.GetPod())
		if !ok {
			return nil, fwk.NewStatus(fwk.Unschedulable, fmt.Sprintf("gangplace: victim %q: not namespace/name", e.GetPod()))
		}
		victims = append(victims, types.NamespacedName{Namespace: namespace, Name: name})
	}
	nominations := map[types.NamespacedName]*fwk.NominatingInfo{}
	for _, b := range answer.GetBindings() {
		namespace, name, ok := splitKey(b.GetPod())
		if !ok {
			continue
		}
		nominations[types.NamespacedName{Namespace: namespace, Name: name}] = &fwk.NominatingInfo{
			NominatedNodeName: b.GetNode(), NominatingMode: fwk.ModeOverride}
	}
	g.evictAll(klog.FromContext(ctx), workload, victims)
	count(PointPodGroupPostFilter, ResultPlanned)
	return &fwk.PodGroupPostFilterResult{NominatingInfos: nominations},
		fwk.NewStatus(fwk.Success, fmt.Sprintf("gangplace: evicting %d victims of the plan", len(victims)))
}

// refusedFor is how long a workload one of whose plan's victims was refused is left to
// DefaultPreemption (the advisor replans meanwhile from what the refusal left).
const refusedFor = 30 * time.Second

// evictTimeout bounds the evictions of one PodGroupPostFilter.
const evictTimeout = 30 * time.Second

// evictAll evicts the victims in parallel, in the background; a refusal is remembered for the
// workload (refusedLately) and counted.
func (g *Gangplace) evictAll(logger klog.Logger, workload string, victims []types.NamespacedName) {
	for _, v := range victims {
		g.evicting.Add(1)
		go func() {
			defer g.evicting.Done()
			ctx, cancel := context.WithTimeout(context.Background(), evictTimeout)
			defer cancel()
			if err := g.evict(ctx, v.Namespace, v.Name); err != nil {
				count(PointPodGroupPostFilter, ResultEvictionRefused)
				logger.Info("gangplace: a victim of the plan could not be evicted: DefaultPreemption decides next",
					"workload", workload, "victim", v.String(), "err", err)
				g.mu.Lock()
				g.refused[workload] = time.Now()
				g.mu.Unlock()
			}
		}()
	}
}

func (g *Gangplace) refusedLately(workload string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	at, ok := g.refused[workload]
	if ok && time.Since(at) > refusedFor {
		delete(g.refused, workload)
		return false
	}
	return ok
}

func splitKey(key string) (string, string, bool) {
	namespace, name, found := strings.Cut(key, "/")
	return namespace, name, found && namespace != "" && name != ""
}
