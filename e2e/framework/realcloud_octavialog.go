package framework

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
)

// OctaviaLogMark is a place in octavia-api's log (hack/realcloud writes
// its output to log/octavia-api.log): the requests after it are the ones
// Octavia served since.
type OctaviaLogMark int64

// octaviaRequestLine is one request line of octavia-api's WSGI server:
//
//	198.18.254.2 - - [27/Nov/2026 13:40:00] "GET /v2/lbaas/loadbalancers HTTP/1.1" 200 1234
var octaviaRequestLine = regexp.MustCompile(`(?m)\] "((?:GET|HEAD|POST|PUT|PATCH|DELETE) /[^ ]*) HTTP/1\.[01]" \d{3} `)

func (r *RealCloud) octaviaLog() string { return filepath.Join(r.Dir, "log", "octavia-api.log") }

// MarkOctaviaLog is the end of octavia-api's log now.
func (r *RealCloud) MarkOctaviaLog() (OctaviaLogMark, error) {
	fi, err := os.Stat(r.octaviaLog())
	if err != nil {
		return 0, fmt.Errorf("octavia-api log: %w", err)
	}
	return OctaviaLogMark(fi.Size()), nil
}

// OctaviaRequestsSince lists the requests ("GET /v2/lbaas/...") octavia-api
// served, from every client, after mark.
func (r *RealCloud) OctaviaRequestsSince(mark OctaviaLogMark) ([]string, error) {
	f, err := os.Open(r.octaviaLog())
	if err != nil {
		return nil, fmt.Errorf("octavia-api log: %w", err)
	}
	defer f.Close()
	if _, err := f.Seek(int64(mark), io.SeekStart); err != nil {
		return nil, fmt.Errorf("octavia-api log: %w", err)
	}
	data, err := io.ReadAll(f)
	if err != nil {
		return nil, fmt.Errorf("octavia-api log: %w", err)
	}
	var out []string
	for _, m := range octaviaRequestLine.FindAllSubmatch(data, -1) {
		out = append(out, string(m[1]))
	}
	return out, nil
}
