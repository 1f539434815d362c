package plugin

import (
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

// Extension points, as the metrics label them.
const (
	PointPreEnqueue         = "PreEnqueue"
	PointPreFilter          = "PreFilter"
	PointPlacementGenerate  = "PlacementGenerate"
	PointPodGroupPostFilter = "PodGroupPostFilter"
	PointProbe              = "Probe" // the health probe PreEnqueue's holds depend on
)

// What became of one question to the advisor. Every result but planned is upstream's behaviour.
const (
	ResultPlanned     = "planned"     // the plan's advice was used
	ResultNotPlanned  = "not_planned" // the plan has no placement for the workload
	ResultUnavailable = "unavailable" // no answer within the deadline: the advisor is slow or down
	ResultStale       = "stale"       // the cluster has been ahead of the plan for too long
	ResultNodeGone    = "node_gone"   // the plan names a node the cycle does not have
	ResultTaken       = "taken"       // PreFilter: the planned node has no room for the pod now
	ResultHeld        = "held"        // PreEnqueue: the pods wait for a plan that considers them
	ResultReleased    = "released"    // PreEnqueue: a plan considered them
	ResultHoldExpired = "hold_expired"
	// PodGroupPostFilter: the Eviction API (or the delete) refused a victim of the plan (a
	// budget, a permission): the next plugin (DefaultPreemption) preempts as upstream does
	ResultEvictionRefused = "eviction_refused"
)

var (
	adviceTotal = metrics.NewCounterVec(&metrics.CounterOpts{
		Subsystem:      "gangplace",
		Name:           "advice_total",
		Help:           "Questions the gangplace plugin asked its advisor, by extension point and result; every result but planned and held is upstream's behaviour.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"extension_point", "result"})
	advisorHealthy = metrics.NewGauge(&metrics.GaugeOpts{
		Subsystem:      "gangplace",
		Name:           "advisor_healthy",
		Help:           "1 while the advisor answers with a plan the cluster is not too far ahead of (PodGroups are then held for its plan), 0 otherwise (upstream's behaviour throughout).",
		StabilityLevel: metrics.ALPHA,
	})
	adviseSeconds = metrics.NewHistogramVec(&metrics.HistogramOpts{
		Subsystem:      "gangplace",
		Name:           "advise_duration_seconds",
		Help:           "How long one Advise call took, deadline included, by extension point.",
		Buckets:        []float64{0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1},
		StabilityLevel: metrics.ALPHA,
	}, []string{"extension_point"})
)

func init() {
	legacyregistry.MustRegister(adviceTotal, adviseSeconds, advisorHealthy)
}

func count(point, result string) { adviceTotal.WithLabelValues(point, result).Inc() }
