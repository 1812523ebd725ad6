package version

import (
	"runtime"

	"github.com/prometheus/client_golang/prometheus"
)

// BuildInfo is the stackward_build_info gauge (always 1) of a component:
// which release runs, so that a rollout can be followed and a metric
// change tied to a version. Both binaries register it on the registry
// they serve.
func BuildInfo(component string) prometheus.Collector {
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "stackward_build_info",
		Help: "A metric with a constant 1 labelled by the component, the Stackward version and the Go version that built it.",
		ConstLabels: prometheus.Labels{
			"component":  component,
			"version":    Version,
			"go_version": runtime.Version(),
		},
	})
	g.Set(1)
	return g
}
