package plugin

import (
	"context"
	"errors"
	"net"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"
	v1 "k8s.io/api/core/v1"
	schedulingv1alpha3 "k8s.io/api/scheduling/v1alpha3"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	pb "gangplace.local/kubescheduler/gangplacev1"
)

// fakeAdvisor answers from a map "Kind/ns/name" -> advice; err for every call when set. Each
// set is a new plan: every answer after it carries the next plan number.
type fakeAdvisor struct {
	mu     sync.Mutex
	advice map[string]*pb.AdviseResponse
	err    error
	asked  []string
	plans  uint64
}

func (f *fakeAdvisor) set(key string, answer *pb.AdviseResponse) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.plans++
	f.advice[key] = answer
}

// questions is how many times the advisor was asked about key.
func (f *fakeAdvisor) questions(key string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, k := range f.asked {
		if k == key {
			n++
		}
	}
	return n
}

func (f *fakeAdvisor) Advise(_ context.Context, in *pb.AdviseRequest, _ ...grpc.CallOption) (*pb.AdviseResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	key := in.GetKind() + "/" + in.GetNamespace() + "/" + in.GetName()
	f.asked = append(f.asked, key)
	if f.err != nil {
		return nil, f.err
	}
	if a, ok := f.advice[key]; ok {
		answer := proto.Clone(a).(*pb.AdviseResponse)
		answer.Plan = f.plans
		return answer, nil
	}
	return &pb.AdviseResponse{Planned: false, Reason: key + " is not in the plan", Plan: f.plans}, nil
}

type group struct {
	name string
	kind fwk.EntityKeyType
	pods []*v1.Pod // what kube-scheduler hands over as the group's unscheduled pods
}

func (g group) GetUnscheduledPods() []*v1.Pod                               { return g.pods }
func (g group) GetName() string                                             { return g.name }
func (g group) GetNamespace() string                                        { return "default" }
func (g group) GetType() fwk.EntityKeyType                                  { return g.kind }
func (g group) GetKey() string                                              { return "default/" + g.name }
func (g group) GetPodGroup() *schedulingv1beta1.PodGroup                    { return nil }
func (g group) GetCompositePodGroup() *schedulingv1alpha3.CompositePodGroup { return nil }
func (g group) GetChildren() []fwk.PodGroupInfo                             { return nil }

// nodes of 4 cpu and 8 Gi each, with room for 110 pods, the pods given running on them.
func nodes(names ...string) []fwk.NodeInfo {
	return nodesWith(nil, names...)
}

func nodesWith(running map[string][]*v1.Pod, names ...string) []fwk.NodeInfo {
	out := []fwk.NodeInfo{}
	for _, n := range names {
		info := framework.NewNodeInfo(running[n]...)
		info.SetNode(&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: n}, Status: v1.NodeStatus{Allocatable: v1.ResourceList{
			v1.ResourceCPU: resource.MustParse("4"), v1.ResourceMemory: resource.MustParse("8Gi"),
			v1.ResourcePods: resource.MustParse("110")}}})
		out = append(out, info)
	}
	return out
}

// using is a pod requesting cpu.
func using(name, cpu string) *v1.Pod {
	p := pod(name)
	p.Spec.Containers = []v1.Container{{Name: "c", Resources: v1.ResourceRequirements{
		Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu)}}}}
	return p
}

func names(infos []fwk.NodeInfo) []string {
	out := []string{}
	for _, n := range infos {
		out = append(out, n.Node().Name)
	}
	return out
}

func gang() *pb.AdviseResponse {
	return &pb.AdviseResponse{Planned: true, Status: "OPTIMAL",
		Bindings:  []*pb.Binding{{Pod: "default/train-0", Node: "n1"}, {Pod: "default/train-1", Node: "n2"}},
		Evictions: []*pb.Eviction{{Pod: "default/low-b", Node: "n1", Cost: 101}}}
}

func newPlugin(t *testing.T, advisor Advisor, evict Evictor, upstream fwk.PlacementGeneratePlugin) *Gangplace {
	t.Helper()
	g, err := NewWith(Args{Address: "unused"}, advisor, evict, upstream)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// pod is a pod with a UID, as every pod the API server hands kube-scheduler has (NodeInfo keys
// its pods by UID).
func pod(name string) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID("uid-" + name)}}
}

func TestPreFilterRestrictsAPlannedPodToItsNode(t *testing.T) {
	advisor := &fakeAdvisor{advice: map[string]*pb.AdviseResponse{"Pod/default/train-1": gang()}}
	g := newPlugin(t, advisor, nil, nil)
	result, status := g.PreFilter(context.Background(), nil, pod("train-1"), nodes("n0", "n1", "n2"))
	if !status.IsSuccess() || result == nil || result.NodeNames.UnsortedList()[0] != "n2" || result.NodeNames.Len() != 1 {
		t.Fatalf("want only n2, got %v %v", result, status)
	}
}

func TestPreFilterKeepsEveryNodeWithoutAdviceOrWhenThePlannedNodeIsGone(t *testing.T) {
	for name, advisor := range map[string]*fakeAdvisor{
		"advisor down": {err: errors.New("connection refused")},
		"not planned":  {advice: map[string]*pb.AdviseResponse{}},
		"node gone":    {advice: map[string]*pb.AdviseResponse{"Pod/default/train-1": gang()}},
	} {
		g := newPlugin(t, advisor, nil, nil)
		result, status := g.PreFilter(context.Background(), nil, pod("train-1"), nodes("n0", "n1"))
		if !status.IsSuccess() || result != nil {
			t.Errorf("%s: want every node (nil result, success), got %v %v", name, result, status)
		}
	}
}

type fixedGenerator struct{ placements []*fwk.Placement }

func (f fixedGenerator) Name() string { return "TopologyPlacementGenerator" }
func (f fixedGenerator) GeneratePlacements(context.Context, fwk.PodGroupCycleState, fwk.PodGroupInfo, *fwk.Placement) (*fwk.GeneratePlacementsResult, *fwk.Status) {
	return &fwk.GeneratePlacementsResult{Placements: f.placements}, nil
}

func TestThePlannedPlacementComesFirstThenUpstreamsAndScoresHighest(t *testing.T) {
	all := nodes("n0", "n1", "n2", "n3")
	upstream := fixedGenerator{[]*fwk.Placement{{Name: "rack-a", Nodes: all[:2]}, {Name: "rack-b", Nodes: all[2:]}}}
	advisor := &fakeAdvisor{advice: map[string]*pb.AdviseResponse{"PodGroup/default/train": gang()}}
	g := newPlugin(t, advisor, nil, upstream)
	result, status := g.GeneratePlacements(context.Background(), nil, group{name: "train", kind: fwk.PodGroupKeyType},
		&fwk.Placement{Nodes: all})
	if !status.IsSuccess() || len(result.Placements) != 3 {
		t.Fatalf("want 3 placements, got %v %v", result, status)
	}
	first := result.Placements[0]
	if first.Name != PlannedPlacement || len(first.Nodes) != 2 || names(first.Nodes)[0] != "n1" || names(first.Nodes)[1] != "n2" {
		t.Fatalf("want the plan's nodes n1, n2 first, got %s %v", first.Name, names(first.Nodes))
	}
	if result.Placements[1].Name != "rack-a" || result.Placements[2].Name != "rack-b" {
		t.Fatalf("upstream's placements must follow in its order")
	}
	for i, want := range []int64{fwk.MaxScore, fwk.MinScore, fwk.MinScore} {
		score, _ := g.ScorePlacement(context.Background(), nil, nil, &fwk.PodGroupAssignments{Placement: result.Placements[i]})
		if score != want {
			t.Errorf("placement %d scored %d, want %d", i, score, want)
		}
	}
}

func TestWithoutAdviceThePlacementsAreUpstreams(t *testing.T) {
	all := nodes("n0", "n1", "n2")
	upstream := fixedGenerator{[]*fwk.Placement{{Name: "rack-a", Nodes: all}}}
	for name, advisor := range map[string]*fakeAdvisor{
		"advisor down":      {err: errors.New("deadline exceeded")},
		"not planned":       {advice: map[string]*pb.AdviseResponse{}},
		"planned node gone": {advice: map[string]*pb.AdviseResponse{"CompositePodGroup/default/train": {Planned: true, Bindings: []*pb.Binding{{Pod: "default/p", Node: "n9"}}}}},
	} {
		g := newPlugin(t, advisor, nil, upstream)
		result, status := g.GeneratePlacements(context.Background(), nil, group{name: "train", kind: fwk.CompositePodGroupKeyType},
			&fwk.Placement{Nodes: all})
		if !status.IsSuccess() || len(result.Placements) != 1 || result.Placements[0].Name != "rack-a" {
			t.Errorf("%s: want upstream's placements alone, got %v", name, result)
		}
		if advisor.asked[0] != "CompositePodGroup/default/train" {
			t.Errorf("%s: asked %v", name, advisor.asked)
		}
	}
}

func TestPostFilterEvictsThePlansVictimsAndNominatesItsPods(t *testing.T) {
	var mu sync.Mutex
	var evicted []string
	evict := func(_ context.Context, ns, name string) error {
		mu.Lock()
		defer mu.Unlock()
		evicted = append(evicted, ns+"/"+name)
		return nil
	}
	advisor := &fakeAdvisor{advice: map[string]*pb.AdviseResponse{"PodGroup/default/train": gang()}}
	g := newPlugin(t, advisor, evict, nil)
	result, status := g.PodGroupPostFilter(context.Background(), nil, group{name: "train", kind: fwk.PodGroupKeyType}, nil)
	if !status.IsSuccess() {
		t.Fatalf("want success, got %v", status)
	}
	g.evicting.Wait() // in the background, as DefaultPreemption's async preemption
	if len(evicted) != 1 || evicted[0] != "default/low-b" {
		t.Fatalf("want low-b evicted, got %v", evicted)
	}
	want := map[string]string{"train-0": "n1", "train-1": "n2"}
	if len(result.NominatingInfos) != len(want) {
		t.Fatalf("want %d nominations, got %v", len(want), result.NominatingInfos)
	}
	for name, node := range want {
		info := result.NominatingInfos[types.NamespacedName{Namespace: "default", Name: name}]
		if info == nil || info.NominatedNodeName != node || info.NominatingMode != fwk.ModeOverride {
			t.Errorf("%s: want nominated to %s, got %v", name, node, info)
		}
	}
}

func TestPostFilterLeavesTheGroupToDefaultPreemptionWithoutAdviceOrOnceAnEvictionWasRefused(t *testing.T) {
	refuse := func(context.Context, string, string) error { return errors.New("429: the PDB allows no disruption") }
	none := newPlugin(t, &fakeAdvisor{err: errors.New("unavailable")}, refuse, nil)
	if result, status := none.PodGroupPostFilter(context.Background(), nil, group{name: "train", kind: fwk.PodGroupKeyType}, nil); status.Code() != fwk.Unschedulable || result != nil {
		t.Errorf("no advice: want Unschedulable (the next plugin preempts), got %v %v", result, status)
	}
	g := newPlugin(t, &fakeAdvisor{advice: map[string]*pb.AdviseResponse{"PodGroup/default/train": gang()}}, refuse, nil)
	if _, status := g.PodGroupPostFilter(context.Background(), nil, group{name: "train", kind: fwk.PodGroupKeyType}, nil); !status.IsSuccess() {
		t.Fatalf("the first attempt nominates and evicts in the background, got %v", status)
	}
	g.evicting.Wait()
	result, status := g.PodGroupPostFilter(context.Background(), nil, group{name: "train", kind: fwk.PodGroupKeyType}, nil)
	if status.Code() != fwk.Unschedulable || result != nil {
		t.Errorf("after a refused eviction: want Unschedulable (DefaultPreemption decides), got %v %v", result, status)
	}
	other, _ := g.PodGroupPostFilter(context.Background(), nil, group{name: "other", kind: fwk.PodGroupKeyType}, nil)
	if other != nil {
		t.Errorf("another workload is not affected by train's refusal")
	}
}

// slowAdvisor is a real gRPC server on loopback that answers only after a delay.
type slowAdvisor struct {
	pb.UnimplementedPlacementServiceServer
	delay time.Duration
}

func (s *slowAdvisor) Advise(context.Context, *pb.AdviseRequest) (*pb.AdviseResponse, error) {
	time.Sleep(s.delay)
	return gang(), nil
}

// serve starts a real gRPC advisor on loopback answering after delay; its client, closed with the test.
func serve(t *testing.T, delay time.Duration) Advisor {
	t.Helper()
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	server := grpc.NewServer()
	pb.RegisterPlacementServiceServer(server, &slowAdvisor{delay: delay})
	go func() { _ = server.Serve(listener) }()
	t.Cleanup(server.Stop)
	conn, err := grpc.NewClient(listener.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return pb.NewPlacementServiceClient(conn)
}

func TestASlowAdvisorIsNoAdviceWithinTheDeadline(t *testing.T) {
	g, err := NewWith(Args{Address: "x", TimeoutMilliseconds: 100}, serve(t, 2*time.Second), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	result, status := g.PreFilter(context.Background(), nil, pod("train-0"), nodes("n1"))
	took := time.Since(start)
	if result != nil || !status.IsSuccess() {
		t.Fatalf("a slow advisor must give upstream's behaviour, got %v %v", result, status)
	}
	if took > time.Second {
		t.Fatalf("the cycle waited %v for the advisor, past its 100 ms deadline", took)
	}
	prompt, err := NewWith(Args{Address: "x", TimeoutMilliseconds: 2000}, serve(t, 0), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	result, _ = prompt.PreFilter(context.Background(), nil, pod("train-0"), nodes("n1"))
	if result == nil || !result.NodeNames.Has("n1") {
		t.Fatalf("a prompt advisor over gRPC restricts the pod to n1, got %v", result)
	}
}

func TestArgsAreChecked(t *testing.T) {
	if _, err := NewWith(Args{Address: "a", PdbPolicy: "lenient"}, nil, nil, nil); err == nil {
		t.Fatal("an unknown pdbPolicy must be refused")
	}
	g, err := NewWith(Args{Address: "a"}, nil, nil, nil)
	if err != nil || g.args.PdbPolicy != "strict" || g.timeout != DefaultTimeout {
		t.Fatalf("defaults: strict and %v, got %v %v", DefaultTimeout, g, err)
	}
}

func TestAPlannedAnswerServesTheRestOfItsWorkloadWithoutAskingAgain(t *testing.T) {
	advisor := &fakeAdvisor{advice: map[string]*pb.AdviseResponse{"Pod/default/train-0": gang()}}
	g := newPlugin(t, advisor, nil, nil)
	for _, name := range []string{"train-0", "train-1", "train-0"} {
		if result, _ := g.PreFilter(context.Background(), nil, pod(name), nodes("n1", "n2")); result == nil {
			t.Fatalf("%s: want its planned node", name)
		}
	}
	if len(advisor.asked) != 1 {
		t.Fatalf("one question for the gang's pods within adviceTTL, asked %v", advisor.asked)
	}
	time.Sleep(adviceTTL + 50*time.Millisecond)
	g.PreFilter(context.Background(), nil, pod("train-1"), nodes("n1", "n2"))
	if len(advisor.asked) != 2 || advisor.asked[1] != "Pod/default/train-1" {
		t.Fatalf("past adviceTTL the advisor is asked again, asked %v", advisor.asked)
	}
}

func TestPreFilterFollowsThePlanOnlyWhereThePodStillFits(t *testing.T) {
	advisor := &fakeAdvisor{advice: map[string]*pb.AdviseResponse{"PodGroup/default/train": gang()}}
	// n1 is full with the plan's victim low-b on it; n2 was taken by "other" after the plan was made
	running := map[string][]*v1.Pod{"n1": {using("low-b", "4")}, "n2": {using("other", "3")}}
	for name, case_ := range map[string]struct {
		pod  *v1.Pod
		want string // "" for every node
	}{
		"the victim's room counts": {using("train-0", "2"), "n1"},
		"taken since the plan":     {using("train-1", "2"), ""},
		"what is left still fits":  {using("train-1", "1"), "n2"},
	} {
		g := newPlugin(t, advisor, nil, nil)
		g.advise(context.Background(), PointPlacementGenerate, "PodGroup", "default", "train")
		result, status := g.PreFilter(context.Background(), nil, case_.pod, nodesWith(running, "n0", "n1", "n2"))
		switch {
		case !status.IsSuccess():
			t.Errorf("%s: %v", name, status)
		case case_.want == "" && result != nil:
			t.Errorf("%s: want every node (upstream's choice), got %v", name, result.NodeNames.UnsortedList())
		case case_.want != "" && (result == nil || !result.NodeNames.Equal(sets.New(case_.want))):
			t.Errorf("%s: want only %s, got %v", name, case_.want, result)
		}
	}
}

func TestNoAdviceServesTheRestOfTheCycleWithoutAskingAgain(t *testing.T) {
	for name, advisor := range map[string]*fakeAdvisor{
		"not planned":  {advice: map[string]*pb.AdviseResponse{}},
		"advisor down": {err: errors.New("connection refused")},
	} {
		g := newPlugin(t, advisor, nil, nil)
		g.GeneratePlacements(context.Background(), nil, group{name: "train"}, &fwk.Placement{Nodes: nodes("n1")})
		for _, p := range []string{"train-0", "train-1"} {
			if result, _ := g.PreFilter(context.Background(), nil, member(p, "train"), nodes("n1", "n2")); result != nil {
				t.Fatalf("%s: %s: want every node, got %v", name, p, result)
			}
		}
		g.PodGroupPostFilter(context.Background(), nil, group{name: "train"}, nil)
		if len(advisor.asked) != 1 {
			t.Errorf("%s: one question (one deadline at most) per PodGroup cycle, asked %v", name, advisor.asked)
		}
	}
}

func TestAnAdvisorTheProbeFindsUnhealthyIsNotAsked(t *testing.T) {
	advisor := &fakeAdvisor{advice: map[string]*pb.AdviseResponse{"Pod/default/train-1": gang(),
		"Pod//" + probeName: {Status: "OPTIMAL", AgeSeconds: 11}}}
	g := newPlugin(t, advisor, nil, nil)
	g.probing.Store(true)
	if g.probeOnce(context.Background()) {
		t.Fatal("a plan 11 s behind the cluster is not healthy")
	}
	if result, _ := g.PreFilter(context.Background(), nil, pod("train-1"), nodes("n1", "n2")); result != nil {
		t.Fatalf("want every node while the advisor is unhealthy, got %v", result)
	}
	if n := advisor.questions("Pod/default/train-1"); n != 0 {
		t.Fatalf("an unhealthy advisor must not be asked in a cycle, asked %d times", n)
	}
	advisor.set("Pod//"+probeName, &pb.AdviseResponse{Status: "OPTIMAL"})
	if !g.probeOnce(context.Background()) {
		t.Fatal("a current plan is healthy")
	}
	time.Sleep(adviceTTL + 50*time.Millisecond)
	if result, _ := g.PreFilter(context.Background(), nil, pod("train-1"), nodes("n1", "n2")); result == nil {
		t.Fatal("healthy again: the plan's node")
	}
}

func TestTheAdvisorsHealthIsKnownWhenProbingStarts(t *testing.T) {
	advisor := &fakeAdvisor{advice: map[string]*pb.AdviseResponse{"Pod/default/train-1": gang(),
		"Pod//" + probeName: {Status: "OPTIMAL"}}}
	g := newPlugin(t, advisor, nil, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	g.startProbing(ctx)
	// no wait: the first cycle after the plugin is made already follows the plan
	if result, _ := g.PreFilter(context.Background(), nil, pod("train-1"), nodes("n1", "n2")); result == nil {
		t.Fatal("a healthy advisor's plan, from the first cycle on")
	}
}

func TestAPodGroupWhosePlannedPodsStillFitGetsThePlannedPlacementAloneElseUpstreams(t *testing.T) {
	upstream := fixedGenerator{[]*fwk.Placement{{Name: "rack-a"}}}
	advisor := &fakeAdvisor{advice: map[string]*pb.AdviseResponse{"PodGroup/default/train": gang()}}
	for name, case_ := range map[string]struct {
		running map[string][]*v1.Pod
		want    string
	}{
		// n1 holds the plan's victim low-b (counted gone); train-0 on n1, train-1 on n2
		"both fit":       {map[string][]*v1.Pod{"n1": {using("low-b", "4")}}, PlannedPlacement},
		"n2 taken since": {map[string][]*v1.Pod{"n2": {using("other", "3")}}, "rack-a"},
		"n1 full without its victim": {map[string][]*v1.Pod{"n1": {using("low-b", "1"), using("other", "3")}},
			"rack-a"},
	} {
		g := newPlugin(t, advisor, nil, upstream)
		pods := []*v1.Pod{using("train-0", "2"), using("train-1", "2")}
		result, status := g.GeneratePlacements(context.Background(), nil,
			group{name: "train", kind: fwk.PodGroupKeyType, pods: pods}, &fwk.Placement{Nodes: nodesWith(case_.running, "n0", "n1", "n2")})
		if !status.IsSuccess() || len(result.Placements) != 1 || result.Placements[0].Name != case_.want {
			t.Errorf("%s: want the %q placement alone, got %v %v", name, case_.want, result, status)
		}
	}
}

func TestPlannedPodsOnOneNodeMustFitThereTogether(t *testing.T) {
	packed := &pb.AdviseResponse{Planned: true, Status: "OPTIMAL",
		Bindings: []*pb.Binding{{Pod: "default/train-0", Node: "n0"}, {Pod: "default/train-1", Node: "n0"}}}
	advisor := &fakeAdvisor{advice: map[string]*pb.AdviseResponse{"PodGroup/default/train": packed}}
	for cpu, want := range map[string]string{"2": PlannedPlacement, "3": "rack-a"} { // 4 cpu: 2+2 fit, 3+3 do not
		g := newPlugin(t, advisor, nil, fixedGenerator{[]*fwk.Placement{{Name: "rack-a"}}})
		pods := []*v1.Pod{using("train-0", cpu), using("train-1", cpu)}
		result, _ := g.GeneratePlacements(context.Background(), nil,
			group{name: "train", kind: fwk.PodGroupKeyType, pods: pods}, &fwk.Placement{Nodes: nodes("n0", "n1")})
		if len(result.Placements) != 1 || result.Placements[0].Name != want {
			t.Errorf("two pods of %s cpu on one 4-cpu node: want the %q placement alone, got %v", cpu, want, result)
		}
	}
}
