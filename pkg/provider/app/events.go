package app

import (
	"context"
	"encoding/json"
	"strings"

	corev1 "k8s.io/api/core/v1"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/kubernetes"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	cloudprovider "k8s.io/cloud-provider"
	ccmapp "k8s.io/cloud-provider/app"
	ccmconfig "k8s.io/cloud-provider/app/config"
	servicecontroller "k8s.io/cloud-provider/controllers/service"
	genericcontrollermanager "k8s.io/controller-manager/app"
	"k8s.io/controller-manager/controller"
	"k8s.io/klog/v2"

	"github.com/stackward/stackward/pkg/loadbalancer"
)

// k8s.io/cloud-provider's service controller records every error of a
// sync as a Warning (SyncLoadBalancerFailed, UpdateLoadBalancerFailed,
// DeleteLoadBalancerFailed), the RetryErrors with which the load balancer
// code says "Octavia is still working, look again in 5 s" included, so
// event-based alerting fires on every normal change. The controller makes
// its own recorder from the client it is given, so that client is where
// its Events can be told apart: an Event whose message carries one of
// loadbalancer's progress reasons is written as a Normal Event with that
// reason, every other Event unchanged.

// serviceControllerWithProgressEvents is the service controller started as
// k8s.io/cloud-provider starts it, with progressClient around its client.
func serviceControllerWithProgressEvents(c ccmapp.ControllerInitFuncConstructor) ccmapp.ControllerInitFuncConstructor {
	c.Constructor = func(initContext ccmapp.ControllerInitContext, completed *ccmconfig.CompletedConfig, cloud cloudprovider.Interface) ccmapp.InitFunc {
		return func(ctx context.Context, cc genericcontrollermanager.ControllerContext) (controller.Interface, bool, error) {
			sc, err := servicecontroller.New(cloud, progressClient{completed.ClientBuilder.ClientOrDie(initContext.ClientName)},
				completed.SharedInformers.Core().V1().Services(), completed.SharedInformers.Core().V1().Nodes(),
				completed.ComponentConfig.KubeCloudShared.ClusterName, utilfeature.DefaultFeatureGate)
			if err != nil {
				// As k8s.io/cloud-provider: a cloud without load balancers
				// runs the other controllers.
				klog.FromContext(ctx).Error(err, "Not starting the service controller")
				return nil, false, nil
			}
			go sc.Run(ctx, int(completed.ComponentConfig.ServiceController.ConcurrentServiceSyncs), cc.ControllerManagerMetrics)
			return nil, true, nil
		}
	}
	return c
}

// progressClient is a client whose core/v1 Events pass through
// progressEvents.
type progressClient struct{ kubernetes.Interface }

func (c progressClient) CoreV1() corev1client.CoreV1Interface {
	return progressCoreV1{c.Interface.CoreV1()}
}

type progressCoreV1 struct{ corev1client.CoreV1Interface }

func (c progressCoreV1) Events(namespace string) corev1client.EventInterface {
	return progressEvents{c.CoreV1Interface.Events(namespace)}
}

// progressEvents rewrites in-progress Warnings on the three calls of the
// event sink the recorder uses. client-go's EventSinkImpl (v0.37) still
// calls the deprecated forms, which are the ones to override; the
// WithContext forms, which it will call once they are removed, are
// rewritten the same way so that day changes nothing here.
type progressEvents struct{ corev1client.EventInterface }

//nolint:staticcheck // SA1019: the sink calls this form; see progressEvents.
func (e progressEvents) CreateWithEventNamespace(ev *corev1.Event) (*corev1.Event, error) {
	return e.EventInterface.CreateWithEventNamespace(asProgress(ev))
}

//nolint:staticcheck // SA1019: the sink calls this form; see progressEvents.
func (e progressEvents) UpdateWithEventNamespace(ev *corev1.Event) (*corev1.Event, error) {
	return e.EventInterface.UpdateWithEventNamespace(asProgress(ev))
}

func (e progressEvents) CreateWithEventNamespaceWithContext(ctx context.Context, ev *corev1.Event) (*corev1.Event, error) {
	return e.EventInterface.CreateWithEventNamespaceWithContext(ctx, asProgress(ev))
}

func (e progressEvents) UpdateWithEventNamespaceWithContext(ctx context.Context, ev *corev1.Event) (*corev1.Event, error) {
	return e.EventInterface.UpdateWithEventNamespaceWithContext(ctx, asProgress(ev))
}

// PatchWithEventNamespace: the recorder patches an Event it created when a
// similar one recurs (a new count, and for an aggregate of similar Events
// a new message). Such a series holds in-progress and failed syncs alike,
// so the patch carries the type and reason that its message calls for.
//
//nolint:staticcheck // SA1019: the sink calls this form; see progressEvents.
func (e progressEvents) PatchWithEventNamespace(ev *corev1.Event, data []byte) (*corev1.Event, error) {
	return e.EventInterface.PatchWithEventNamespace(ev, progressPatch(ev, data))
}

func (e progressEvents) PatchWithEventNamespaceWithContext(ctx context.Context, ev *corev1.Event, data []byte) (*corev1.Event, error) {
	return e.EventInterface.PatchWithEventNamespaceWithContext(ctx, ev, progressPatch(ev, data))
}

// progressPatch is data with the type and reason its message calls for.
func progressPatch(ev *corev1.Event, data []byte) []byte {
	var patch map[string]any
	if err := json.Unmarshal(data, &patch); err == nil {
		if msg, ok := patch["message"].(string); ok {
			typ, reason, text := classify(ev.Type, ev.Reason, msg)
			patch["type"], patch["reason"], patch["message"] = typ, reason, text
			if b, err := json.Marshal(patch); err == nil {
				data = b
			}
		}
	}
	return data
}

func asProgress(ev *corev1.Event) *corev1.Event {
	typ, reason, msg := classify(ev.Type, ev.Reason, ev.Message)
	if typ == ev.Type && reason == ev.Reason {
		return ev
	}
	out := ev.DeepCopy()
	out.Type, out.Reason, out.Message = typ, reason, msg
	return out
}

// The prefixes the service controller puts before a sync's error.
var errorPrefixes = []string{
	"Error syncing load balancer: failed to ensure load balancer: ",
	"Error syncing load balancer: failed to delete load balancer: ",
	"Error syncing load balancer: ",
	"Error deleting load balancer: ",
}

const combinedPrefix = "(combined from similar events): "

// classify returns the type, reason and message of an Event of the
// service controller: a Normal Event with the progress reason (and the
// message without the controller's "Error ..." prefix) for an in-progress
// step, a Warning LoadBalancerStuck for a stuck load balancer, the Event
// as it is otherwise.
func classify(typ, reason, msg string) (string, string, string) {
	if stuck := loadbalancer.StuckReason(msg); stuck != "" {
		typ, reason = corev1.EventTypeWarning, stuck
	} else if progress := loadbalancer.ProgressReason(msg); progress != "" {
		typ, reason = corev1.EventTypeNormal, progress
	} else {
		return typ, reason, msg
	}
	text, combined := strings.CutPrefix(msg, combinedPrefix)
	for _, p := range errorPrefixes {
		if rest, ok := strings.CutPrefix(text, p); ok {
			text = rest
			break
		}
	}
	// "Error updating load balancer with new hosts [...], error: <err>"
	if _, rest, ok := strings.Cut(text, "], error: "); ok && strings.HasPrefix(text, "Error updating load balancer") {
		text = rest
	}
	if combined {
		text = combinedPrefix + text
	}
	return typ, reason, text
}
