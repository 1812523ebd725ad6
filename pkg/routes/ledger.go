package routes

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
)

// Record says that this cluster made a route, and on which port it put the
// destination's address pair.
type Record struct {
	Route
	Router   string `json:"router"`
	PortID   string `json:"port"`
	ServerID string `json:"server"`
	Node     string `json:"node"`
}

// Ledger is the durable list of the routes this cluster made. It must
// outlive the CCM process, its leadership and the nodes themselves.
type Ledger interface {
	List(ctx context.Context, routerID string) ([]Record, error)
	Get(ctx context.Context, routerID string, route Route) (Record, bool, error)
	Put(ctx context.Context, rec Record) error
	Delete(ctx context.Context, routerID string, route Route) error
}

// DefaultLedgerName is the ConfigMap holding the ledger.
const DefaultLedgerName = "stackward-routes"

// ConfigMapLedger keeps the ledger in a ConfigMap of this cluster, one key
// per route. Writes are optimistic (resourceVersion) and retried on
// conflict, so two CCM replicas around a leader change cannot lose each
// other's records. Only the elected CCM writes it; everything else may read
// it to see which routes are the cluster's.
type ConfigMapLedger struct {
	Client    func() (kubernetes.Interface, error)
	Namespace string
	Name      string
}

var _ Ledger = (*ConfigMapLedger)(nil)

// LedgerKey is the ConfigMap key of a route (keys allow [-._a-zA-Z0-9]).
func LedgerKey(routerID string, r Route) string {
	esc := strings.NewReplacer("/", "_", ":", "-")
	return esc.Replace(routerID + "." + r.Destination + ".via." + r.NextHop)
}

func (l *ConfigMapLedger) read(ctx context.Context, c kubernetes.Interface) (*corev1.ConfigMap, error) {
	cm, err := c.CoreV1().ConfigMaps(l.Namespace).Get(ctx, l.Name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("read route ledger ConfigMap %s/%s: %w", l.Namespace, l.Name, err)
	}
	return cm, nil
}

func decodeRecords(cm *corev1.ConfigMap, routerID string) ([]Record, error) {
	var out []Record
	var errs []error
	for k, v := range cm.Data {
		var rec Record
		if err := json.Unmarshal([]byte(v), &rec); err != nil {
			errs = append(errs, fmt.Errorf("route ledger ConfigMap %s/%s key %q: %w", cm.Namespace, cm.Name, k, err))
			continue
		}
		if rec.Router == routerID {
			out = append(out, rec)
		}
	}
	slices.SortFunc(out, func(a, b Record) int {
		return strings.Compare(a.Destination+" "+a.NextHop, b.Destination+" "+b.NextHop)
	})
	// An unreadable record is an error, not an absence: the route it
	// names would otherwise look like nobody's.
	return out, errors.Join(errs...)
}

// List returns the router's records; none when the ConfigMap does not exist.
func (l *ConfigMapLedger) List(ctx context.Context, routerID string) ([]Record, error) {
	c, err := l.Client()
	if err != nil {
		return nil, err
	}
	cm, err := l.read(ctx, c)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return decodeRecords(cm, routerID)
}

// Get returns the route's record.
func (l *ConfigMapLedger) Get(ctx context.Context, routerID string, route Route) (Record, bool, error) {
	recs, err := l.List(ctx, routerID)
	if err != nil {
		return Record{}, false, err
	}
	for _, r := range recs {
		if r.Route == route {
			return r, true, nil
		}
	}
	return Record{}, false, nil
}

// Put records the route, creating the ConfigMap if needed.
func (l *ConfigMapLedger) Put(ctx context.Context, rec Record) error {
	v, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	return l.modify(ctx, func(data map[string]string) bool {
		k := LedgerKey(rec.Router, rec.Route)
		if data[k] == string(v) {
			return false
		}
		data[k] = string(v)
		return true
	})
}

// Delete forgets the route.
func (l *ConfigMapLedger) Delete(ctx context.Context, routerID string, route Route) error {
	return l.modify(ctx, func(data map[string]string) bool {
		k := LedgerKey(routerID, route)
		_, had := data[k]
		delete(data, k)
		return had
	})
}

func (l *ConfigMapLedger) modify(ctx context.Context, change func(map[string]string) bool) error {
	c, err := l.Client()
	if err != nil {
		return err
	}
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cm, err := l.read(ctx, c)
		if apierrors.IsNotFound(err) {
			cm = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: l.Namespace, Name: l.Name,
				Labels:      map[string]string{"app.kubernetes.io/managed-by": "stackward-ccm"},
				Annotations: map[string]string{"stackward.io/purpose": "routes this cluster created on Neutron routers; a route not listed here is never changed"}}}
			data := map[string]string{}
			if !change(data) {
				return nil
			}
			cm.Data = data
			_, err = c.CoreV1().ConfigMaps(l.Namespace).Create(ctx, cm, metav1.CreateOptions{})
			if apierrors.IsAlreadyExists(err) {
				return apierrors.NewConflict(corev1.Resource("configmaps"), l.Name, err)
			}
			return err
		}
		if err != nil {
			return err
		}
		if cm.Data == nil {
			cm.Data = map[string]string{}
		}
		if !change(cm.Data) {
			return nil
		}
		_, err = c.CoreV1().ConfigMaps(l.Namespace).Update(ctx, cm, metav1.UpdateOptions{})
		return err
	})
}
