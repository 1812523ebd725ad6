package loadbalancer

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// Every name, tag and description Stackward gives a cloud resource is built
// here, so that finding our resources again (and never someone else's)
// depends on one file.

// maxNameLen is Octavia's (and Neutron's) limit for names and descriptions.
const maxNameLen = 255

// Tag prefixes. Octavia tags are at most 255 characters; a cluster UID (a
// Kubernetes UID, 36 characters) always fits.
const (
	clusterUIDTagPrefix = "kube_cluster_uid="
	serviceTagPrefix    = "kube_service="
)

// Identity says which cluster a resource belongs to: the --cluster-name
// (readable, but not unique: two clusters may share it) and the cluster UID
// (the kube-system namespace UID, unique per cluster).
type Identity struct {
	ClusterName string
	ClusterUID  string
}

// ServiceRef names a Service.
type ServiceRef struct {
	Namespace, Name string
}

func (s ServiceRef) String() string { return s.Namespace + "/" + s.Name }

// LoadBalancerName is kube_service_<cluster>_<namespace>_<name>, shortened
// with a hash suffix when it would exceed Octavia's limit.
func LoadBalancerName(clusterName string, svc ServiceRef) string {
	return fit(fmt.Sprintf("kube_service_%s_%s_%s", clusterName, svc.Namespace, svc.Name))
}

// ClusterTag marks every load balancer of one cluster; lookups filter on it
// so that a cluster never adopts another's load balancer of the same name.
func ClusterTag(uid string) string { return clusterUIDTagPrefix + uid }

// serviceTag records the Service a load balancer serves, for operators.
func serviceTag(svc ServiceRef) string { return fit(serviceTagPrefix + svc.String()) }

// LoadBalancerTags are the tags of a Service's load balancer.
func LoadBalancerTags(id Identity, svc ServiceRef) []string {
	return []string{ClusterTag(id.ClusterUID), serviceTag(svc)}
}

// loadBalancerDescription is informative only; nothing parses it.
func loadBalancerDescription(id Identity, svc ServiceRef) string {
	return fit(fmt.Sprintf("Kubernetes Service %s of cluster %s (%s), managed by stackward", svc, id.ClusterName, id.ClusterUID))
}

// listenerName, poolName and monitorName name the children after the
// Service port they serve. They are for people: children are matched by
// protocol and port, never by name.
func listenerName(lbName, protocol string, port int) string {
	return fit(fmt.Sprintf("listener_%s_%d_%s", strings.ToLower(protocol), port, lbName))
}

func poolName(lbName, protocol string, port int) string {
	return fit(fmt.Sprintf("pool_%s_%d_%s", strings.ToLower(protocol), port, lbName))
}

func monitorName(lbName, protocol string, port int) string {
	return fit(fmt.Sprintf("monitor_%s_%d_%s", strings.ToLower(protocol), port, lbName))
}

// floatingIPMarker ends the description of every floating IP Stackward
// allocated for this cluster; only those are released on delete.
func floatingIPMarker(uid string) string { return "[stackward " + ClusterTag(uid) + "]" }

// FloatingIPDescription is the description of a floating IP Stackward
// allocates for a Service.
func FloatingIPDescription(id Identity, svc ServiceRef) string {
	marker := floatingIPMarker(id.ClusterUID)
	head := "Floating IP for Kubernetes Service " + svc.String() + " "
	if len(head)+len(marker) > maxNameLen {
		head = head[:maxNameLen-len(marker)]
	}
	return head + marker
}

// fipServiceOf reads the Service a floating IP was allocated for from its
// description, as Stackward ("Floating IP for Kubernetes Service ns/name
// [stackward ...]") or the upstream CCM ("Floating IP for Kubernetes
// external service ns/name from cluster ...") write it.
func fipServiceOf(description string) (ServiceRef, bool) {
	rest, ok := strings.CutPrefix(description, "Floating IP for Kubernetes Service ")
	if !ok {
		if rest, ok = strings.CutPrefix(description, upstreamFloatingIPPrefix+" "); !ok {
			return ServiceRef{}, false
		}
	}
	ref, _, _ := strings.Cut(rest, " ")
	ns, name, ok := strings.Cut(ref, "/")
	if !ok || ns == "" || name == "" {
		return ServiceRef{}, false
	}
	return ServiceRef{Namespace: ns, Name: name}, true
}

// createdByUs reports whether a floating IP's description says this
// cluster allocated it.
func createdByUs(description, uid string) bool {
	return uid != "" && strings.HasSuffix(description, floatingIPMarker(uid))
}

// fit shortens s to maxNameLen, replacing the tail with "_" and 8 hex
// digits of the whole name's SHA-256, so distinct long names stay distinct.
func fit(s string) string {
	if len(s) <= maxNameLen {
		return s
	}
	sum := sha256.Sum256([]byte(s))
	suffix := "_" + hex.EncodeToString(sum[:])[:8]
	return s[:maxNameLen-len(suffix)] + suffix
}

// What the upstream openstack-cloud-controller-manager (v1.36) gives a
// Service's load balancer, read from its source: the name
// kube_service_<cluster>_<namespace>_<name> cut (not hashed) to 255
// characters, that name as the load balancer's tag and as its listeners'
// tags, a fixed description, and floating IPs whose description starts
// with upstreamFloatingIPPrefix. Upstream releases such a floating IP when
// it deletes the load balancer, unless keep-floatingip is set.
const (
	upstreamFloatingIPPrefix = "Floating IP for Kubernetes external service"
	// adoptedTag marks a load balancer this cluster adopted from the
	// upstream CCM: its floating IP is released as upstream would have.
	adoptedTag = "stackward_adopted_from=openstack-ccm"
)

// keptTag marks a shared load balancer whose creator Service asked to keep
// its floating IP and left before the other Services: whoever deletes the
// load balancer last only detaches the floating IP.
const keptTag = "stackward_keep_floatingip"

// upstreamLoadBalancerName is the name upstream gives a Service's load
// balancer; it differs from LoadBalancerName only beyond 255 characters.
func upstreamLoadBalancerName(clusterName string, svc ServiceRef) string {
	s := fmt.Sprintf("kube_service_%s_%s_%s", clusterName, svc.Namespace, svc.Name)
	if len(s) > maxNameLen {
		s = s[:maxNameLen]
	}
	return s
}

// upstreamDescription is the description upstream gives a Service's load
// balancer.
func upstreamDescription(clusterName string, svc ServiceRef) string {
	return fmt.Sprintf("Kubernetes external service %s from cluster %s", svc, clusterName)
}

// adoptionTags are the tags of an upstream load balancer once adopted:
// its own (the upstream name tag among them), the cluster and Service
// tags, the Service's owner tag (shared.go) and adoptedTag.
func adoptionTags(lb *LoadBalancer, id Identity, svc ServiceRef) []string {
	tags := append([]string{}, lb.Tags...)
	for _, t := range append(LoadBalancerTags(id, svc), ownerTag(id.ClusterName, svc), adoptedTag) {
		if !slices.Contains(tags, t) {
			tags = append(tags, t)
		}
	}
	return tags
}

// clusterTagOf returns the cluster-UID tag a load balancer carries, "" for
// none.
func clusterTagOf(lb *LoadBalancer) string {
	for _, t := range lb.Tags {
		if strings.HasPrefix(t, clusterUIDTagPrefix) {
			return t
		}
	}
	return ""
}

// releasable says whether deleting lb releases the floating IP f (unless
// the Service keeps it): one this cluster allocated, or, on a load
// balancer adopted from the upstream CCM, one upstream allocated.
func releasable(f FloatingIP, lb *LoadBalancer, uid string) bool {
	if createdByUs(f.Description, uid) {
		return true
	}
	return slices.Contains(lb.Tags, adoptedTag) && strings.HasPrefix(f.Description, upstreamFloatingIPPrefix)
}

// removedMonitorTagPrefix starts the tag Stackward puts on a pool before it
// removes the pool's health monitor for a listener create on the OVN
// provider (ovnmonitors.go): the monitor's settings, kept in Octavia so
// any Stackward process re-creates the monitor, whatever restarts between.
const removedMonitorTagPrefix = "stackward_removed_monitor="

// removedMonitorTag encodes a monitor's settings in one tag: type, delay,
// timeout, max retries, max retries down, URL path and name. A name that
// does not fit Octavia's 255 characters is shortened (it is for people);
// settings that do not fit are an error, and the monitor then stays.
func removedMonitorTag(m MonitorSpec) (string, error) {
	name := []rune(m.Name)
	for {
		tag := removedMonitorTagPrefix + strings.Join([]string{m.Type, strconv.Itoa(m.Delay), strconv.Itoa(m.Timeout),
			strconv.Itoa(m.MaxRetries), strconv.Itoa(m.MaxRetriesDown), url.QueryEscape(m.URLPath), url.QueryEscape(string(name))}, ",")
		if len(tag) <= maxNameLen {
			return tag, nil
		}
		if len(name) == 0 {
			return "", fmt.Errorf("the settings of health monitor %q do not fit in a tag of %d characters", m.Name, maxNameLen)
		}
		name = name[:len(name)-1]
	}
}

// removedMonitorOf finds the tag removedMonitorTag wrote among a pool's
// tags and decodes it; ok is false when there is none or it does not
// decode (a tag of another version is left alone).
func removedMonitorOf(tags []string) (tag string, m MonitorSpec, ok bool) {
	for _, t := range tags {
		rest, found := strings.CutPrefix(t, removedMonitorTagPrefix)
		if !found {
			continue
		}
		f := strings.Split(rest, ",")
		if len(f) != 7 || f[0] == "" {
			continue
		}
		var n [4]int
		var err error
		for i := range n {
			if n[i], err = strconv.Atoi(f[i+1]); err != nil {
				break
			}
		}
		path, perr := url.QueryUnescape(f[5])
		name, nerr := url.QueryUnescape(f[6])
		if err != nil || perr != nil || nerr != nil {
			continue
		}
		return t, MonitorSpec{Name: name, Type: f[0], Delay: n[0], Timeout: n[1], MaxRetries: n[2], MaxRetriesDown: n[3], URLPath: path}, true
	}
	return "", MonitorSpec{}, false
}
