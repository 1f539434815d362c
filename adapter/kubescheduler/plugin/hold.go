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
// this memory. One goroutine (“watch“), running while any group is held, asks the advisor
// which plan is current every poll; it asks about a held group when the group is new or a new
// plan is out, and releases the group (activates its pods) when a plan considers it, when the
// advisor cannot answer, or when the hold runs out. A thousand groups held at once cost one
// question per poll plus one per group per plan, not one per group per poll.
//
// Pods are held only while the advisor is healthy (the probe's verdict): a held group is
// released in whatever order its plan comes, so holding while the advisor cannot answer would
// only reorder upstream's queue; not holding then keeps upstream's order (priority, then arrival).
type holds struct {
	g        *Gangplace
	hold     time.Duration // 0: never held
	poll     time.Duration
	now      func() time.Time
	activate Activator
	mu       sync.Mutex
	groups   map[string]*held // "ns/podGroupName"
	watching bool             // the watch goroutine runs
	pruned   time.Time        // the last prune: at most one a minute, PreEnqueue holding the queue's lock
}

// probeInterval is how often the plugin asks whether its advisor is healthy.
const probeInterval = 200 * time.Millisecond

// probeName is the pod the probe asks about: no pod has it (a name holds no uppercase), so the
// answer is the plan's status, number and age alone.
const probeName = "Gangplace-Probe"

// asking bounds the questions about held groups in flight at once.
const asking = 8

type held struct {
	pods            map[string]*v1.Pod // the group's pods PreEnqueue has seen, "ns/name"
	released        time.Time          // zero while held
	until           time.Time          // when the hold runs out
	namespace, name string             // the pod to ask about: the one the group was (re-)armed for
	armed           uint64             // one more on every arm, so that an answer for an older arm is dropped
	asked           uint64             // the plan number the group was last asked at (when askedAny)
	askedAny        bool
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
		!g.healthy.Load() {
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
		h.arm(group, pod, now)
	case !group.released.IsZero() && group.pods[name] != nil:
		return nil // released, and this pod was among those the plan was awaited for
	case !group.released.IsZero():
		// a pod the group did not have when it was released (a gang's pods arrive one by one, and
		// a plan made before the last one could not place the gang): hold the group again for a
		// plan that considers this pod too
		h.arm(group, pod, now)
	}
	group.pods[name] = pod
	count(PointPreEnqueue, ResultHeld)
	return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, "gangplace: waiting for a plan that considers pod group "+key)
}

// arm holds the group until a plan considers “pod“, and starts the watch if it is not running
// (called with mu held).
func (h *holds) arm(group *held, pod *v1.Pod, now time.Time) {
	group.released = time.Time{}
	group.until = now.Add(h.hold)
	group.namespace, group.name = pod.Namespace, pod.Name
	group.armed++
	group.askedAny = false
	if !h.watching {
		h.watching = true
		go h.watch()
	}
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

// waiting is one held group as the watch saw it at the start of a round.
type waiting struct {
	key             string
	group           *held
	armed           uint64
	namespace, name string
	due             bool // never asked since armed, or asked at an older plan
}

// watch runs rounds every poll until no group is held.
func (h *holds) watch() {
	for {
		time.Sleep(h.poll)
		if !h.round() {
			return
		}
	}
}

// round is one look at the held groups: false (the watch ends) when none is held.
func (h *holds) round() bool {
	now := h.now()
	h.mu.Lock()
	var expired, rest []waiting
	for key, group := range h.groups {
		if !group.released.IsZero() {
			continue
		}
		w := waiting{key: key, group: group, armed: group.armed, namespace: group.namespace, name: group.name}
		if now.After(group.until) {
			expired = append(expired, w)
		} else {
			rest = append(rest, w)
		}
	}
	if len(expired)+len(rest) == 0 {
		h.watching = false
		h.mu.Unlock()
		return false
	}
	h.mu.Unlock()
	for _, w := range expired {
		h.release(w, ResultHoldExpired)
	}
	if len(rest) == 0 {
		return true
	}
	current, err := h.g.ask(context.Background(), PointProbe, "Pod", "", probeName)
	if err != nil { // counted by ask: the advisor cannot answer, upstream decides
		for _, w := range rest {
			h.release(w, ResultUnavailable)
		}
		return true
	}
	if h.g.stale(current) {
		return true // no plan that counts: the groups wait for the next one or their hold's end
	}
	plan := current.GetPlan()
	h.mu.Lock()
	for i := range rest {
		g := rest[i].group
		rest[i].due = g.armed == rest[i].armed && (!g.askedAny || g.asked != plan)
	}
	h.mu.Unlock()
	slots := make(chan struct{}, asking)
	var done sync.WaitGroup
	for _, w := range rest {
		if !w.due {
			continue
		}
		slots <- struct{}{}
		done.Add(1)
		go func() {
			defer func() { <-slots; done.Done() }()
			h.askAbout(w, plan)
		}()
	}
	done.Wait()
	return true
}

// askAbout asks whether the current plan considers a held group, and releases it when it does
// (or when the advisor cannot answer); otherwise records the plan it was asked at.
func (h *holds) askAbout(w waiting, plan uint64) {
	answer, err := h.g.ask(context.Background(), PointPreEnqueue, "Pod", w.namespace, w.name)
	switch {
	case err != nil:
		h.release(w, ResultUnavailable) // counted by ask
	case answer.GetCovered() && !h.g.stale(answer):
		h.release(w, ResultReleased)
	default:
		h.mu.Lock()
		if w.group.armed == w.armed {
			w.group.asked, w.group.askedAny = max(plan, answer.GetPlan()), true
		}
		h.mu.Unlock()
	}
}

// release lets the group's pods into the queue, unless the group was armed again meanwhile.
func (h *holds) release(w waiting, result string) {
	h.mu.Lock()
	if w.group.armed != w.armed || !w.group.released.IsZero() {
		h.mu.Unlock()
		return
	}
	w.group.released = h.now()
	pods := make(map[string]*v1.Pod, len(w.group.pods))
	for k, p := range w.group.pods {
		pods[k] = p
	}
	h.mu.Unlock()
	if result != ResultUnavailable {
		count(PointPreEnqueue, result)
	}
	klog.V(2).Info("gangplace: pod group released to the queue", "podGroup", w.key, "result", result, "pods", len(pods))
	h.activate(pods)
}
