package plugin

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
)

// holds is PreEnqueue's state: the PodGroups whose pods wait in the queue for a plan that
// considers them. PreEnqueue runs under the scheduling queue's lock, so it only reads and writes
// this memory; a goroutine per held group asks the advisor and, when a plan considers the group
// (or the advisor is down, or the hold runs out), releases it and activates its pods.
//
// Pods are held only while the advisor is healthy: answering, with a plan the cluster has not
// been ahead of for too long (“probe“ asks every probeInterval). A held group is released in
// whatever order its plan comes, so holding while the advisor cannot answer would only reorder
// upstream's queue; not holding then keeps upstream's order (priority, then arrival).
type holds struct {
	g        *Gangplace
	hold     time.Duration // 0: never held
	poll     time.Duration
	now      func() time.Time
	activate Activator
	healthy  atomic.Bool // the last probe's verdict; false until a probe succeeds
	mu       sync.Mutex
	groups   map[string]*held // "ns/podGroupName"
	pruned   time.Time        // the last prune: at most one a minute, PreEnqueue holding the queue's lock
}

// probeInterval is how often the plugin asks whether its advisor is healthy.
const probeInterval = 200 * time.Millisecond

// probeName is the pod the probe asks about: no pod has it (a name holds no uppercase), so the
// answer is the plan's status and age alone.
const probeName = "Gangplace-Probe"

type held struct {
	pods     map[string]*v1.Pod // the group's pods PreEnqueue has seen, "ns/name"
	released time.Time          // zero while held
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
	if h.hold <= 0 || pod.Spec.SchedulingGroup == nil || pod.Spec.SchedulingGroup.PodGroupName == nil ||
		!h.healthy.Load() {
		return nil
	}
	key := pod.Namespace + "/" + *pod.Spec.SchedulingGroup.PodGroupName
	name := pod.Namespace + "/" + pod.Name
	now := h.now()
	h.mu.Lock()
	defer h.mu.Unlock()
	group := h.groups[key]
	switch {
	case group == nil:
		h.prune(now)
		group = &held{pods: map[string]*v1.Pod{}}
		h.groups[key] = group
		h.arm(key, group, pod, now)
	case !group.released.IsZero() && group.pods[name] != nil:
		return nil // released, and this pod was among those the plan was awaited for
	case !group.released.IsZero():
		// a pod the group did not have when it was released (a gang's pods arrive one by one, and
		// a plan made before the last one could not place the gang): hold the group again for a
		// plan that considers this pod too
		h.arm(key, group, pod, now)
	}
	group.pods[name] = pod
	count(PointPreEnqueue, ResultHeld)
	return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, "gangplace: waiting for a plan that considers pod group "+key)
}

// arm holds the group until a plan considers “pod“ (called with mu held).
func (h *holds) arm(key string, group *held, pod *v1.Pod, now time.Time) {
	group.released = time.Time{}
	go h.await(key, group, now.Add(h.hold), pod.Namespace, pod.Name)
}

// prune forgets groups released long ago, at most once a minute (called with mu held).
func (h *holds) prune(now time.Time) {
	if now.Sub(h.pruned) < time.Minute {
		return
	}
	h.pruned = now
	for key, group := range h.groups {
		if !group.released.IsZero() && now.Sub(group.released) > forget {
			delete(h.groups, key)
		}
	}
}

// await asks the advisor about one of the group's pods until a plan considers it, the advisor
// cannot answer, or the hold runs out; then releases the group and activates its held pods.
func (h *holds) await(key string, group *held, until time.Time, namespace, name string) {
	result := ResultHoldExpired
	for h.now().Before(until) {
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

// probeOnce asks the advisor once and records whether it is healthy: it answers within the
// deadline, it has a plan, and the cluster has not been ahead of that plan for too long.
func (h *holds) probeOnce(ctx context.Context) bool {
	answer, err := h.g.ask(ctx, PointProbe, "Pod", "", probeName)
	healthy := err == nil && answer.GetStatus() != "" && !h.g.stale(answer)
	if healthy {
		advisorHealthy.Set(1)
	} else {
		advisorHealthy.Set(0)
	}
	if h.healthy.Swap(healthy) != healthy {
		klog.FromContext(ctx).Info("gangplace: the advisor's health changed", "healthy", healthy,
			"err", err, "ageSeconds", answer.GetAgeSeconds())
	}
	return healthy
}

// probe runs probeOnce every probeInterval until ctx ends.
func (h *holds) probe(ctx context.Context) {
	ticker := time.NewTicker(probeInterval)
	defer ticker.Stop()
	for {
		h.probeOnce(ctx)
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
	}
}
