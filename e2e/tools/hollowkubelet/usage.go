package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	cadvisortest "k8s.io/kubernetes/pkg/kubelet/cadvisor/testing"
)

// processCadvisor is kubemark's fake cAdvisor, except that the root
// container "/" (the node) reports this process's own CPU time and resident
// memory. kubemark's fake reports no container at all, so the kubelet's
// resource metrics (/metrics/resource, what metrics-server scrapes) and
// /stats/summary had no node figures: `kubectl top nodes` showed nothing.
// A hollow node's real usage is its kubelet's, so that is what it reports.
type processCadvisor struct {
	cadvisortest.Fake
	start time.Time

	mu       sync.Mutex
	lastAt   time.Time
	lastUsed uint64 // CPU nanoseconds at lastAt
}

func newProcessCadvisor(nodeName string) *processCadvisor {
	return &processCadvisor{Fake: cadvisortest.Fake{NodeName: nodeName}, start: time.Now()}
}

// ContainerInfoV2 answers for "/" alone, as a non-recursive request (the
// kubelet's node stats) or a recursive one (it then holds no pod's
// containers: the runtime is fake).
func (c *processCadvisor) ContainerInfoV2(name string, options requestOptions) (map[string]containerInfo, error) {
	if name != "/" {
		return c.Fake.ContainerInfoV2(name, options)
	}
	memory, err := machineMemory(&c.Fake)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	used, err := cpuTime()
	if err != nil {
		return nil, err
	}
	rss, err := residentBytes()
	if err != nil {
		return nil, err
	}
	stats := &containerStats{
		Timestamp: now,
		Cpu:       &cpuStats{Usage: cpuUsage{Total: used}},
		Memory:    &memoryStats{Usage: rss, WorkingSet: rss, RSS: rss},
	}
	c.mu.Lock()
	if !c.lastAt.IsZero() && now.After(c.lastAt) && used >= c.lastUsed {
		rate := float64(used-c.lastUsed) / now.Sub(c.lastAt).Seconds() // nanocores
		stats.CpuInst = &cpuInstStats{Usage: cpuInstUsage{Total: uint64(rate)}}
	}
	c.lastAt, c.lastUsed = now, used
	c.mu.Unlock()
	return map[string]containerInfo{"/": {
		Spec: containerSpec{
			CreationTime: c.start,
			HasCpu:       true,
			HasMemory:    true,
			Memory:       memorySpec{Limit: memory},
		},
		Stats: []*containerStats{stats},
	}}, nil
}

// cpuTime is the CPU time this process has used, user and system, in
// nanoseconds.
func cpuTime() (uint64, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, fmt.Errorf("getrusage: %w", err)
	}
	return uint64(ru.Utime.Nano() + ru.Stime.Nano()), nil
}

// residentBytes is this process's resident set size now
// (/proc/self/statm, second field, in pages).
func residentBytes() (uint64, error) {
	data, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0, err
	}
	fields := strings.Fields(string(data))
	if len(fields) < 2 {
		return 0, fmt.Errorf("/proc/self/statm: %q has no resident field", data)
	}
	pages, err := strconv.ParseUint(fields[1], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("/proc/self/statm: resident %q: %w", fields[1], err)
	}
	return pages * uint64(os.Getpagesize()), nil
}
