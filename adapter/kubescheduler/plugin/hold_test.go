package plugin

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"

	pb "gangplace.local/kubescheduler/gangplacev1"
)

func member(name, group string) *v1.Pod {
	p := pod(name)
	p.Spec.SchedulingGroup = &v1.PodSchedulingGroup{PodGroupName: &group}
	return p
}

// holding is a plugin whose activations arrive on the returned channel.
func holding(t *testing.T, advisor Advisor, args Args) (*Gangplace, chan map[string]*v1.Pod) {
	t.Helper()
	args.Address = "unused"
	g, err := NewWith(args, advisor, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	activated := make(chan map[string]*v1.Pod, 4)
	g.holds.activate = func(pods map[string]*v1.Pod) { activated <- pods }
	g.healthy.Store(true) // as the probe finds an advisor that answers with a fresh plan
	return g, activated
}

func wait(t *testing.T, activated chan map[string]*v1.Pod, within time.Duration) (map[string]*v1.Pod, time.Duration) {
	t.Helper()
	start := time.Now()
	select {
	case pods := <-activated:
		return pods, time.Since(start)
	case <-time.After(within):
		t.Fatalf("no activation within %v", within)
		return nil, 0
	}
}

func TestAGroupIsHeldUntilAPlanConsidersItThenActivated(t *testing.T) {
	advisor := &fakeAdvisor{advice: map[string]*pb.AdviseResponse{}}
	g, activated := holding(t, advisor, Args{HoldMilliseconds: 5000})
	for _, name := range []string{"train-0", "train-1"} {
		if status := g.PreEnqueue(context.Background(), member(name, "train")); status.Code() != fwk.UnschedulableAndUnresolvable {
			t.Fatalf("%s: want held before the plan considers the group, got %v", name, status)
		}
	}
	select {
	case <-activated:
		t.Fatal("activated before any plan considered the group")
	case <-time.After(100 * time.Millisecond):
	}
	advisor.set("Pod/default/train-0", &pb.AdviseResponse{Covered: true, Planned: true})
	pods, _ := wait(t, activated, 2*time.Second)
	if len(pods) != 2 || pods["default/train-0"] == nil || pods["default/train-1"] == nil {
		t.Fatalf("want both held pods activated, got %v", pods)
	}
	if status := g.PreEnqueue(context.Background(), member("train-1", "train")); !status.IsSuccess() {
		t.Fatalf("a released group's pod must pass, got %v", status)
	}
}

func TestAHoldEndsAtItsLimitAndAtOnceWhenTheAdvisorIsDown(t *testing.T) {
	never := &fakeAdvisor{advice: map[string]*pb.AdviseResponse{
		"Pod/default/train-0": {Covered: true, Planned: true, AgeSeconds: 60}}} // stale: not a plan that counts
	g, activated := holding(t, never, Args{HoldMilliseconds: 300})
	g.PreEnqueue(context.Background(), member("train-0", "train"))
	if _, took := wait(t, activated, 5*time.Second); took < 250*time.Millisecond {
		t.Fatalf("released after %v: a stale plan must not release the group before the hold ends", took)
	}
	down, activated := holding(t, &fakeAdvisor{err: errors.New("connection refused")}, Args{HoldMilliseconds: 60000})
	down.PreEnqueue(context.Background(), member("train-0", "train"))
	if _, took := wait(t, activated, 5*time.Second); took > 2*time.Second {
		t.Fatalf("an advisor that is down must release the group at once, took %v", took)
	}
}

func TestPodsOutsideAGroupAndHoldsTurnedOffAreNeverHeld(t *testing.T) {
	advisor := &fakeAdvisor{advice: map[string]*pb.AdviseResponse{}}
	g, _ := holding(t, advisor, Args{})
	if status := g.PreEnqueue(context.Background(), pod("solo")); !status.IsSuccess() {
		t.Fatalf("a pod outside any group is never held, got %v", status)
	}
	off, _ := holding(t, advisor, Args{HoldMilliseconds: -1})
	if status := off.PreEnqueue(context.Background(), member("train-0", "train")); !status.IsSuccess() {
		t.Fatalf("holdMilliseconds < 0 turns holds off, got %v", status)
	}
	if len(advisor.asked) != 0 {
		t.Fatalf("PreEnqueue must not ask for pods it does not hold: %v", advisor.asked)
	}
}

func TestAStalePlanIsNoAdviceInACycle(t *testing.T) {
	stale := gang()
	stale.AgeSeconds = 11 // past the default 10 s
	g := newPlugin(t, &fakeAdvisor{advice: map[string]*pb.AdviseResponse{"Pod/default/train-1": stale}}, nil, nil)
	if result, _ := g.PreFilter(context.Background(), nil, pod("train-1"), nodes("n1", "n2")); result != nil {
		t.Fatalf("a plan 11 s behind the cluster must give upstream's behaviour, got %v", result)
	}
}

func TestNothingIsHeldWhileTheProbeFindsTheAdvisorUnhealthy(t *testing.T) {
	for name, case_ := range map[string]struct {
		advisor *fakeAdvisor
		healthy bool
	}{
		"down":        {&fakeAdvisor{err: errors.New("connection refused")}, false},
		"no plan yet": {&fakeAdvisor{advice: map[string]*pb.AdviseResponse{}}, false},
		"stale plan": {&fakeAdvisor{advice: map[string]*pb.AdviseResponse{
			"Pod//" + probeName: {Status: "OPTIMAL", AgeSeconds: 11}}}, false},
		"fresh plan": {&fakeAdvisor{advice: map[string]*pb.AdviseResponse{
			"Pod//" + probeName: {Status: "OPTIMAL", AgeSeconds: 0.2}}}, true},
	} {
		g, _ := holding(t, case_.advisor, Args{})
		if got := g.probeOnce(context.Background()); got != case_.healthy {
			t.Errorf("%s: probe says healthy=%v, want %v", name, got, case_.healthy)
		}
		status := g.PreEnqueue(context.Background(), member("train-0", "train"))
		if held := status.Code() == fwk.UnschedulableAndUnresolvable; held != case_.healthy {
			t.Errorf("%s: held=%v: pods are held only while the advisor is healthy", name, held)
		}
	}
}

func TestAPodArrivingAfterItsGroupWasReleasedHoldsTheGroupAgainForAPlanThatConsidersIt(t *testing.T) {
	advisor := &fakeAdvisor{advice: map[string]*pb.AdviseResponse{"Pod/default/train-0": {Covered: true}}}
	g, activated := holding(t, advisor, Args{HoldMilliseconds: 5000})
	g.PreEnqueue(context.Background(), member("train-0", "train"))
	wait(t, activated, 2*time.Second) // the plan considered train-0 (alone: the gang not yet whole)
	if status := g.PreEnqueue(context.Background(), member("train-0", "train")); !status.IsSuccess() {
		t.Fatalf("train-0 was released, got %v", status)
	}
	if status := g.PreEnqueue(context.Background(), member("train-1", "train")); status.Code() != fwk.UnschedulableAndUnresolvable {
		t.Fatalf("train-1 arrived after the release: the group must be held again, got %v", status)
	}
	if status := g.PreEnqueue(context.Background(), member("train-0", "train")); status.Code() != fwk.UnschedulableAndUnresolvable {
		t.Fatalf("the whole group waits again, train-0 too, got %v", status)
	}
	advisor.set("Pod/default/train-1", &pb.AdviseResponse{Covered: true})
	pods, _ := wait(t, activated, 2*time.Second)
	if len(pods) != 2 {
		t.Fatalf("want both pods activated once a plan considers train-1, got %v", pods)
	}
}

func TestHeldGroupsAreAskedAboutOncePerPlanNotOncePerPoll(t *testing.T) {
	advisor := &fakeAdvisor{advice: map[string]*pb.AdviseResponse{}}
	g, activated := holding(t, advisor, Args{HoldMilliseconds: 60000})
	for i := range 50 {
		g.PreEnqueue(context.Background(), member(fmt.Sprintf("train-%d-0", i), fmt.Sprintf("train-%d", i)))
	}
	time.Sleep(20 * g.holds.poll) // about twenty rounds: each group asked once, at plan 0
	for i := range 50 {
		if n := advisor.questions(fmt.Sprintf("Pod/default/train-%d-0", i)); n != 1 {
			t.Fatalf("train-%d: asked %d times under one plan, want once", i, n)
		}
	}
	advisor.set("Pod/default/train-7-0", &pb.AdviseResponse{Covered: true}) // plan 1 considers train-7 only
	pods, _ := wait(t, activated, 2*time.Second)
	if len(pods) != 1 || pods["default/train-7-0"] == nil {
		t.Fatalf("want train-7 released, got %v", pods)
	}
	time.Sleep(10 * g.holds.poll)
	for i := range 50 {
		if n := advisor.questions(fmt.Sprintf("Pod/default/train-%d-0", i)); n != 2 {
			t.Fatalf("train-%d: asked %d times over two plans, want twice", i, n)
		}
	}
}
