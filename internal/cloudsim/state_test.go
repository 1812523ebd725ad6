package cloudsim

import (
	"fmt"
	"testing"
)

func TestCollectionKeepsOrderAcrossDeletesAndCompaction(t *testing.T) {
	c := newColl[int]()
	for i := 0; i < 300; i++ {
		v := i
		c.add(fmt.Sprint(i), &v)
	}
	for i := 0; i < 300; i++ {
		if i%3 != 0 { // delete two thirds: forces compaction
			c.del(fmt.Sprint(i))
		}
	}
	c.del("nope")
	all := c.all()
	if len(all) != 100 || c.len() != 100 {
		t.Fatalf("%d values, len %d, want 100", len(all), c.len())
	}
	for i, v := range all {
		if *v != i*3 {
			t.Fatalf("value %d is %d, want %d", i, *v, i*3)
		}
		if got := c.at(c.pos[fmt.Sprint(*v)]); got != v {
			t.Fatalf("position of %d is stale", *v)
		}
	}
	if *c.first() != 0 {
		t.Fatalf("first = %d", *c.first())
	}
}

func TestServerPagingSurvivesDeletes(t *testing.T) {
	sim, authURL := startSim(t, Options{Seed: bigSeed(300)})
	for i := 0; i < 300; i += 2 {
		sv, _ := sim.ServerByName(fmt.Sprintf("node-%05d", i))
		if err := sim.DeleteServer(sv.ID); err != nil {
			t.Fatal(err)
		}
	}
	compute := computeClient(t, authURL)
	n := 0
	prev := ""
	err := serversEach(t, compute, 7, func(name string) {
		if prev != "" && name >= prev {
			t.Fatalf("%s listed after %s: not newest first", name, prev)
		}
		prev = name
		n++
	})
	if err != nil || n != 150 {
		t.Fatalf("listed %d servers (%v), want 150", n, err)
	}
}
