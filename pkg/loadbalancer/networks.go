package loadbalancer

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/stackward/stackward/pkg/config"
	"github.com/stackward/stackward/pkg/openstack"
)

// Where the VIP and the floating IP go, beyond the IDs in annotations.go:
// a named class of networks from cloud.conf, a floating subnet chosen by
// name pattern or tags, and an existing port for the VIP. Names and
// semantics are the upstream OpenStack CCM's.
const (
	// AnnotationClass names a [LoadBalancerClass "name"] section. Its
	// floating network and floating subnet win over the Service's
	// annotations; its network-id, subnet-id and member-subnet-id apply
	// when the Service does not set them.
	AnnotationClass = "loadbalancer.openstack.org/class"
	// AnnotationFloatingSubnet picks the floating IP's subnet by name: a
	// name, a glob, or "~regexp"; a leading "!" negates.
	AnnotationFloatingSubnet = "loadbalancer.openstack.org/floating-subnet"
	// AnnotationFloatingSubnetTags picks it by tags: "a,b" (any of them),
	// "&a,b" (all), "!..." (negated).
	AnnotationFloatingSubnetTags = "loadbalancer.openstack.org/floating-subnet-tags"
	// AnnotationPortID is an existing Neutron port for the VIP. Octavia
	// never deletes a port it did not create, and neither does Stackward.
	AnnotationPortID = "loadbalancer.openstack.org/port-id"
)

// Subnet is a Neutron subnet as the floating subnet choice sees it.
type Subnet = openstack.Subnet

// TagFilter is Neutron's tag query on a list: every tag (All) or any, or
// (Negate) not every / none of them.
type TagFilter = openstack.TagFilter

// networks reads the class, floating subnet and port annotations into o,
// after the plain ones.
func (p *annotationParser) networks(o *options, cfg config.LoadBalancer) {
	// [LoadBalancer] internal-lb = true allows internal load balancers only,
	// as upstream: the annotation cannot ask for a floating IP then.
	if cfg.InternalLB {
		o.internal = true
	}
	o.portID = p.str(AnnotationPortID, "")
	_, idSet := p.a[AnnotationFloatingSubnetID]
	pattern, patternSet := p.a[AnnotationFloatingSubnet]
	tags, tagsSet := p.a[AnnotationFloatingSubnetTags]
	switch {
	case idSet:
	case patternSet || tagsSet:
		// The Service's own choice of subnet replaces the config's.
		o.floatingSubnetID, o.floatingSubnet, o.floatingSubnetTags = "", pattern, tags
	case cfg.FloatingSubnetID == "":
		o.floatingSubnet, o.floatingSubnetTags = cfg.FloatingSubnet, cfg.FloatingSubnetTags
	}
	if name, ok := p.a[AnnotationClass]; ok && name != "" {
		cls := cfg.Classes[name]
		if cls == nil {
			known := make([]string, 0, len(cfg.Classes))
			for k := range cfg.Classes {
				known = append(known, k)
			}
			slices.Sort(known)
			p.fail(AnnotationClass, name, fmt.Sprintf("no [LoadBalancerClass %q] in the cloud config (classes: %s)", name, strings.Join(known, ", ")))
			return
		}
		if cls.FloatingNetworkID != "" {
			o.floatingNetworkID = cls.FloatingNetworkID
		}
		if cls.LBProvider != "" {
			o.provider = cls.LBProvider
		}
		if cls.FloatingSubnetID != "" || cls.FloatingSubnet != "" || cls.FloatingSubnetTags != "" {
			o.floatingSubnetID, o.floatingSubnet, o.floatingSubnetTags = cls.FloatingSubnetID, cls.FloatingSubnet, cls.FloatingSubnetTags
		}
		for _, f := range []struct {
			annotation string
			dst        *string
			class      string
		}{
			{AnnotationNetworkID, &o.networkID, cls.NetworkID},
			{AnnotationSubnetID, &o.subnetID, cls.SubnetID},
			{AnnotationMemberSubnetID, &o.memberSubnetID, cls.MemberSubnetID},
		} {
			if p.a[f.annotation] == "" && f.class != "" {
				*f.dst = f.class
			}
		}
	}
	if o.floatingSubnetID == "" && o.floatingSubnet != "" {
		if _, err := config.SubnetNameMatcher(o.floatingSubnet); err != nil {
			name := AnnotationFloatingSubnet
			if !patternSet {
				name = "floating-subnet in the cloud config"
			}
			p.fail(name, o.floatingSubnet, err.Error())
		}
	}
}

// allocateFloatingIP creates fip on the configured floating subnet or, when
// the Service names subnets by pattern or tags, on the first matching one
// that still has addresses (Neutron answers 409 when a subnet is full).
func (m *Manager) allocateFloatingIP(ctx context.Context, svc *corev1.Service, o *options, fip FloatingIP) (*FloatingIP, error) {
	if o.floatingSubnetID != "" || (o.floatingSubnet == "" && o.floatingSubnetTags == "") {
		fip.SubnetID = o.floatingSubnetID
		return m.Neutron.CreateFloatingIP(ctx, fip)
	}
	var filter TagFilter
	if o.floatingSubnetTags != "" {
		filter.Tags, filter.All, filter.Negate = config.SubnetTags(o.floatingSubnetTags)
	}
	subnets, err := m.Neutron.Subnets(ctx, o.floatingNetworkID, filter)
	if err != nil {
		return nil, fmt.Errorf("list the subnets of floating network %s: %w", o.floatingNetworkID, err)
	}
	match := func(string) bool { return true }
	if o.floatingSubnet != "" {
		if match, err = config.SubnetNameMatcher(o.floatingSubnet); err != nil {
			return nil, err // parseOptions checked it
		}
	}
	var tried []string
	for _, s := range subnets {
		if !match(s.Name) {
			continue
		}
		fip.SubnetID = s.ID
		f, err := m.Neutron.CreateFloatingIP(ctx, fip)
		if err == nil {
			return f, nil
		}
		if !openstack.IsBusy(err) {
			return nil, fmt.Errorf("on subnet %s (%s): %w", s.Name, s.ID, err)
		}
		klog.FromContext(ctx).Info("Floating subnet has no free address, trying the next", "service", refOf(svc).String(), "subnet", s.Name)
		tried = append(tried, s.Name)
	}
	if len(tried) > 0 {
		return nil, fmt.Errorf("every matching subnet of floating network %s is full (%s)", o.floatingNetworkID, strings.Join(tried, ", "))
	}
	return nil, fmt.Errorf("no subnet of floating network %s matches floating-subnet %q and floating-subnet-tags %q (%s, %s or the class)",
		o.floatingNetworkID, o.floatingSubnet, o.floatingSubnetTags, AnnotationFloatingSubnet, AnnotationFloatingSubnetTags)
}
