package openstack

import (
	"context"
	"errors"
	"testing"
	"time"
)

type countingOwnership struct {
	Ownership
	asked [][]string
	err   error
}

func (c *countingOwnership) Networks(_ context.Context, ids []string) ([]NetworkInfo, error) {
	c.asked = append(c.asked, ids)
	if c.err != nil {
		return nil, c.err
	}
	var out []NetworkInfo
	for _, id := range ids {
		out = append(out, NetworkInfo{ID: id, Name: "name-" + id, ProjectID: "p"})
	}
	return out, nil
}

func TestCachedNetworksAsksNeutronOncePerTTL(t *testing.T) {
	inner := &countingOwnership{}
	c := CachedNetworks(inner, time.Minute).(*networkCache)
	now := time.Unix(1000, 0)
	c.now = func() time.Time { return now }
	ctx := context.Background()
	for range 3 {
		got, err := c.Networks(ctx, []string{"a"})
		if err != nil || len(got) != 1 || got[0].Name != "name-a" {
			t.Fatalf("Networks = %+v, %v", got, err)
		}
	}
	if len(inner.asked) != 1 {
		t.Errorf("Neutron asked %d times for one network within the TTL, want 1", len(inner.asked))
	}
	got, err := c.Networks(ctx, []string{"a", "b"})
	if err != nil || len(got) != 2 || len(inner.asked) != 2 || len(inner.asked[1]) != 1 || inner.asked[1][0] != "b" {
		t.Errorf("a new network: got %+v, asked %v; want only b asked", got, inner.asked)
	}
	now = now.Add(2 * time.Minute)
	inner.err = errors.New("neutron down")
	if _, err := c.Networks(ctx, []string{"a"}); err == nil {
		t.Error("an expired entry was served while Neutron failed; want the error")
	}
}
