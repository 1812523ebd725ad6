package framework

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// RestartAPIServer stops kube-apiserver and starts it again with the same
// command line, as a crash or an upgrade would, and returns once /readyz
// answers again (or ctx ends). Clients see connection errors meanwhile.
func (cp *ControlPlane) RestartAPIServer(ctx context.Context) error {
	for i, p := range cp.procs {
		if p.Name != "kube-apiserver" {
			continue
		}
		p.Stop()
		np, err := StartProcess(cp.Dir, p.Name, p.cmd.Path, p.cmd.Args[1:]...)
		if err != nil {
			return fmt.Errorf("restart kube-apiserver: %w", err)
		}
		cp.procs[i] = np
		return wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 90*time.Second, true, func(ctx context.Context) (bool, error) {
			if done, err := np.Exited(); done {
				return false, fmt.Errorf("kube-apiserver exited after restart: %v\n%s", err, np.Tail(3000))
			}
			_, err := cp.Admin.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
			return err == nil, nil
		})
	}
	return fmt.Errorf("restart kube-apiserver: no such process in this control plane")
}
