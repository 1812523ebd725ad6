package cloudsim

import (
	"slices"
	"testing"

	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/attributestags"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/security/groups"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/subnets"
)

func TestSubnetTagsAreSetAndFilteredOnAsInNeutron(t *testing.T) {
	_, authURL := startSim(t, Options{})
	net := networkClient(t, authURL)
	ctx := ctxT(t)
	list := func(opts subnets.ListOpts) []string {
		t.Helper()
		pages, err := subnets.List(net, opts).AllPages(ctx)
		if err != nil {
			t.Fatal(err)
		}
		ss, err := subnets.ExtractSubnets(pages)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, s := range ss {
			names = append(names, s.Name)
		}
		slices.Sort(names)
		return names
	}
	all := list(subnets.ListOpts{})
	var id string
	pages, _ := subnets.List(net, subnets.ListOpts{Name: "private-subnet"}).AllPages(ctx)
	if ss, _ := subnets.ExtractSubnets(pages); len(ss) == 1 {
		id = ss[0].ID
	} else {
		t.Fatalf("private-subnet: %v (all %v)", ss, all)
	}
	if _, err := attributestags.ReplaceAll(ctx, net, "subnets", id, attributestags.ReplaceAllOpts{Tags: []string{"blue", "v4"}}).Extract(); err != nil {
		t.Fatal(err)
	}
	if err := attributestags.Add(ctx, net, "subnets", id, "green").ExtractErr(); err != nil {
		t.Fatal(err)
	}
	tags, err := attributestags.List(ctx, net, "subnets", id).Extract()
	if err != nil || !slices.Equal(tags, []string{"blue", "v4", "green"}) {
		t.Fatalf("tags %v %v", tags, err)
	}
	for _, tc := range []struct {
		name string
		opts subnets.ListOpts
		want bool
	}{
		{"tags: all present", subnets.ListOpts{Tags: "blue,green"}, true},
		{"tags: one missing", subnets.ListOpts{Tags: "blue,red"}, false},
		{"tags-any", subnets.ListOpts{TagsAny: "red,green"}, true},
		{"not-tags: all present is dropped", subnets.ListOpts{NotTags: "blue,green"}, false},
		{"not-tags-any: one present is dropped", subnets.ListOpts{NotTagsAny: "red,green"}, false},
		{"not-tags-any: none present is kept", subnets.ListOpts{NotTagsAny: "red"}, true},
	} {
		if got := slices.Contains(list(tc.opts), "private-subnet"); got != tc.want {
			t.Errorf("%s: listed %v, want %v", tc.name, got, tc.want)
		}
	}
	if err := attributestags.Delete(ctx, net, "subnets", id, "blue").ExtractErr(); err != nil {
		t.Fatal(err)
	}
	if err := attributestags.Delete(ctx, net, "subnets", id, "blue").ExtractErr(); err == nil {
		t.Error("deleting a missing tag succeeded; Neutron answers 404")
	}
	s, err := subnets.Get(ctx, net, id).Extract()
	if err != nil || !slices.Equal(s.Tags, []string{"v4", "green"}) {
		t.Errorf("subnet tags %v %v", s.Tags, err)
	}
}

func TestSecurityGroupTagsAreAddedShownAndDeleted(t *testing.T) {
	_, authURL := startSim(t, Options{})
	net := networkClient(t, authURL)
	ctx := ctxT(t)
	g, err := groups.Create(ctx, net, groups.CreateOpts{Name: "lb-sg-x", Description: "a Service's group"}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	if len(g.Tags) != 0 {
		t.Fatalf("a new group has tags %v", g.Tags)
	}
	if err := attributestags.Add(ctx, net, "security-groups", g.ID, "kube_cluster_uid=u1").ExtractErr(); err != nil {
		t.Fatal(err)
	}
	if err := attributestags.Add(ctx, net, "security-groups", g.ID, "kube_cluster_uid=u1").ExtractErr(); err != nil {
		t.Fatalf("adding a tag again: %v", err)
	}
	got, err := groups.Get(ctx, net, g.ID).Extract()
	if err != nil || !slices.Equal(got.Tags, []string{"kube_cluster_uid=u1"}) {
		t.Fatalf("tags %v, %v; want the one tag once", got.Tags, err)
	}
	if err := attributestags.Delete(ctx, net, "security-groups", g.ID, "kube_cluster_uid=u1").ExtractErr(); err != nil {
		t.Fatal(err)
	}
	if err := attributestags.Delete(ctx, net, "security-groups", g.ID, "kube_cluster_uid=u1").ExtractErr(); err == nil {
		t.Error("deleting a tag that is not there succeeded (Neutron answers 404)")
	}
}
