// kube-scheduler 1.37 with the gangplace plugin registered (issue 49): upstream's command, one
// plugin more, enabled by a KubeSchedulerConfiguration profile (plugin.Name in its plugins).
package main

import (
	"os"

	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	_ "k8s.io/component-base/metrics/prometheus/version"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"

	"gangplace.local/kubescheduler/plugin"
)

func main() {
	command := app.NewSchedulerCommand(app.WithPlugin(plugin.Name, plugin.New))
	os.Exit(cli.Run(command))
}
