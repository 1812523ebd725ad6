package loadbalancer

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"k8s.io/klog/v2"
)

// A Service's security group is found by its name, which carries the
// Service's UID: only this Service of this cluster can have made it, and
// the upstream CCM names it the same way, so a group upstream made is
// the Service's own when Stackward takes over. Its cluster-UID tag says so
// in the cloud too: Stackward tags the groups it creates, and tags an
// untagged group of the name on its first sync (upstream's, or one from a
// Stackward release that did not tag) — adopting it. A group that carries
// another cluster's UID tag is never changed or deleted: its Service's UID
// coincides with ours only if someone copied it, which is for an operator
// to sort out.

// ownGroup returns the Service's group (nil when there is none) once it is
// this cluster's. adopt tags an untagged one; without it (a delete) the
// tag is not worth a call.
func (m *Manager) ownGroup(ctx context.Context, name string, adopt bool) (*SecurityGroup, error) {
	group, err := m.findGroup(ctx, name)
	if err != nil || group == nil {
		return group, err
	}
	uid, err := m.ClusterUID(ctx)
	if err != nil {
		return nil, fmt.Errorf("security group %q: %w", name, err)
	}
	ours := ClusterTag(uid)
	if slices.Contains(group.Tags, ours) {
		return group, nil
	}
	if i := slices.IndexFunc(group.Tags, func(t string) bool { return strings.HasPrefix(t, clusterUIDTagPrefix) }); i >= 0 {
		return nil, fmt.Errorf("security group %q (%s) carries another cluster's tag %s: not adopting it, nothing changed", name, group.ID, group.Tags[i])
	}
	if !adopt {
		return group, nil
	}
	if err := m.SecurityGroups.AddGroupTag(ctx, group.ID, ours); err != nil {
		return nil, fmt.Errorf("tag security group %q (%s) %s: %w", name, group.ID, ours, err)
	}
	group.Tags = append(group.Tags, ours)
	klog.FromContext(ctx).Info("Adopted a security group made for this Service before (by the upstream CCM, or untagged)", "securityGroup", name, "id", group.ID)
	return group, nil
}

// createGroup makes the Service's group and tags it as this cluster's. A
// tag that fails leaves an untagged group, which the next sync adopts.
func (m *Manager) createGroup(ctx context.Context, name, description string) (*SecurityGroup, error) {
	uid, err := m.ClusterUID(ctx)
	if err != nil {
		return nil, fmt.Errorf("security group %q: %w", name, err)
	}
	group, err := m.SecurityGroups.CreateGroup(ctx, name, description)
	if err != nil {
		return nil, fmt.Errorf("create security group %q: %w", name, err)
	}
	if err := m.SecurityGroups.AddGroupTag(ctx, group.ID, ClusterTag(uid)); err != nil {
		return nil, fmt.Errorf("tag security group %q (%s): %w", name, group.ID, err)
	}
	group.Tags = append(group.Tags, ClusterTag(uid))
	return group, nil
}
