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
// kube-controller-manager exits when it cannot renew its lease; as the
// kubelet would restart a static pod, every control-plane process that
// exited meanwhile is started again too.
func (cp *ControlPlane) RestartAPIServer(ctx context.Context) error {
	i := -1
	for j, p := range cp.procs {
		if p.Name == "kube-apiserver" {
			i = j
		}
	}
	if i < 0 {
		return fmt.Errorf("restart kube-apiserver: no such process in this control plane")
	}
	cp.procs[i].Stop()
	if err := cp.restart(i); err != nil {
		return err
	}
	np := cp.procs[i]
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 90*time.Second, true, func(ctx context.Context) (bool, error) {
		if done, err := np.Exited(); done {
			return false, fmt.Errorf("kube-apiserver exited after restart: %w\n%s", err, np.Tail(3000))
		}
		_, err := cp.Admin.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		return err == nil, nil
	})
	if err != nil {
		return err
	}
	// Give the others the time a lost lease takes to stop them, then
	// start whatever stopped.
	time.Sleep(15 * time.Second)
	for j, p := range cp.procs {
		if done, _ := p.Exited(); done {
			if err := cp.restart(j); err != nil {
				return err
			}
		}
	}
	return nil
}

// restart starts the i-th control-plane process again with its command line.
func (cp *ControlPlane) restart(i int) error {
	p := cp.procs[i]
	np, err := StartProcess(cp.Dir, p.Name, p.cmd.Path, p.cmd.Args[1:]...)
	if err != nil {
		return fmt.Errorf("restart %s: %w", p.Name, err)
	}
	cp.procs[i] = np
	return nil
}
