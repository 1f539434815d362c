package plugin

import (
	"context"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
)

// holds is PreEnqueue's state: the PodGroups whose pods wait in the queue for a plan that
// considers them. PreEnqueue runs under the scheduling queue's lock, so it only reads and writes
// this memory; a goroutine per held group asks the advisor and, when a plan considers the group
// (or the advisor is down, or the hold runs out), releases it and activates its pods.
type holds struct {
	g        *Gangplace
	hold     time.Duration // 0: never held
	poll     time.Duration
	now      func() time.Time
	activate Activator
	mu       sync.Mutex
	groups   map[string]*held // "ns/podGroupName"
}

type held struct {
	pods     map[string]*v1.Pod // the group's pods PreEnqueue held, "ns/name"
	until    time.Time
	released time.Time // zero while held
}

// forget is how long a released group is remembered (its pods pass PreEnqueue at once).
const forget = 10 * time.Minute

func newHolds(g *Gangplace, hold time.Duration) *holds {
	return &holds{g: g, hold: hold, poll: 20 * time.Millisecond, now: time.Now, activate: func(map[string]*v1.Pod) {},
		groups: map[string]*held{}}
}

// PreEnqueue holds a PodGroup's pod while the advisor's plan has not considered its group yet.
func (g *Gangplace) PreEnqueue(_ context.Context, pod *v1.Pod) *fwk.Status {
	h := g.holds
	if h.hold <= 0 || pod.Spec.SchedulingGroup == nil || pod.Spec.SchedulingGroup.PodGroupName == nil {
		return nil
	}
	key := pod.Namespace + "/" + *pod.Spec.SchedulingGroup.PodGroupName
	now := h.now()
	h.mu.Lock()
	defer h.mu.Unlock()
	group := h.groups[key]
	if group == nil {
		h.prune(now)
		group = &held{pods: map[string]*v1.Pod{}, until: now.Add(h.hold)}
		h.groups[key] = group
		go h.await(key, group, pod.Namespace, pod.Name)
	}
	if !group.released.IsZero() {
		return nil
	}
	group.pods[pod.Namespace+"/"+pod.Name] = pod
	count(PointPreEnqueue, ResultHeld)
	return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, "gangplace: waiting for a plan that considers pod group "+key)
}

// prune forgets groups released long ago (called with mu held).
func (h *holds) prune(now time.Time) {
	for key, group := range h.groups {
		if !group.released.IsZero() && now.Sub(group.released) > forget {
			delete(h.groups, key)
		}
	}
}

// await asks the advisor about one of the group's pods until a plan considers it, the advisor
// cannot answer, or the hold runs out; then releases the group and activates its held pods.
func (h *holds) await(key string, group *held, namespace, name string) {
	result := ResultHoldExpired
	for h.now().Before(group.until) {
		answer, err := h.g.ask(context.Background(), PointPreEnqueue, "Pod", namespace, name)
		if err != nil {
			result = ResultUnavailable // counted by ask
			break
		}
		if answer.GetCovered() && !h.g.stale(answer) {
			result = ResultReleased
			break
		}
		time.Sleep(h.poll)
	}
	if result != ResultUnavailable {
		count(PointPreEnqueue, result)
	}
	h.mu.Lock()
	group.released = h.now()
	pods := make(map[string]*v1.Pod, len(group.pods))
	for k, p := range group.pods {
		pods[k] = p
	}
	h.mu.Unlock()
	klog.V(2).Info("gangplace: pod group released to the queue", "podGroup", key, "result", result, "pods", len(pods))
	h.activate(pods)
}
