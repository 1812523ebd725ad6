package openstack

import (
	"context"
	"fmt"
	"net/url"
	"regexp"
	"strings"

	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
)

// QueryBudget is the most bytes of filter values one bulk request carries
// in its URL: well inside the 8 KiB request line that common proxies and
// API gateways in front of OpenStack accept. Callers split longer lists
// with Chunks.
const QueryBudget = 4000

// Chunks splits values into runs whose URL-encoded sizes, each counted
// with perValue bytes of overhead (the key, "=" and "&"), stay within
// budget; a value too long for a run alone is a run of its own.
func Chunks(values []string, perValue, budget int) [][]string {
	return chunksBy(values, func(v string) int { return len(url.QueryEscape(v)) + perValue }, budget)
}

// NameChunks splits names into runs whose NamesRegexp, URL-encoded, stays
// within budget.
func NameChunks(names []string, budget int) [][]string {
	// "^(" and ")$" once, an encoded "|" per name.
	return chunksBy(names, func(n string) int { return len(url.QueryEscape(regexp.QuoteMeta(n))) + len("%7C") }, budget-len("%5E%28%29%24"))
}

func chunksBy(values []string, size func(string) int, budget int) [][]string {
	var out [][]string
	var run []string
	total := 0
	for _, v := range values {
		n := size(v)
		if len(run) > 0 && total+n > budget {
			out = append(out, run)
			run, total = nil, 0
		}
		run = append(run, v)
		total += n
	}
	if len(run) > 0 {
		out = append(out, run)
	}
	return out
}

// NamesRegexp is Nova's name filter (a regular expression) for servers
// named exactly one of names: "^(a|b)$", each name escaped. Only
// alternation and anchors are used, which every database's regex dialect
// reads the same; callers still keep exact matches only.
func NamesRegexp(names []string) string {
	quoted := make([]string, len(names))
	for i, n := range names {
		quoted[i] = regexp.QuoteMeta(n)
	}
	return "^(" + strings.Join(quoted, "|") + ")$"
}

// portsQuery lists the ports of some devices in one project.
type portsQuery struct {
	projectID string
	deviceIDs []string
}

func (q portsQuery) ToPortListQuery() (string, error) {
	v := url.Values{}
	v.Set("project_id", q.projectID)
	for _, id := range q.deviceIDs {
		v.Add("device_id", id)
	}
	return "?" + v.Encode(), nil
}

// PortsOfServers lists, in one request (pages followed), the ports of the
// project on any of the servers. An empty project would list other
// projects' ports with admin credentials: refused.
func (n *gopherNetwork) PortsOfServers(ctx context.Context, serverIDs []string, projectID string) ([]Port, error) {
	switch {
	case projectID == "":
		return nil, fmt.Errorf("ports of servers: empty project ID")
	case len(serverIDs) == 0:
		return nil, nil
	}
	var list []Port
	err := n.caller.Do(ctx, ServiceNetwork, "list_ports", func(ctx context.Context) error {
		pages, err := ports.List(n.client, portsQuery{projectID: projectID, deviceIDs: serverIDs}).AllPages(ctx)
		if err != nil {
			return err
		}
		list, err = extractPorts(pages)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("list ports of %d servers in project %q: %w", len(serverIDs), projectID, err)
	}
	return list, nil
}
