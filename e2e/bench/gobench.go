package bench

import (
	"bufio"
	"io"
	"strconv"
	"strings"
)

// ParseGoBench reads `go test -bench` output into name → unit → value, so
// benchmarks that live beside their package (pkg/loadbalancer's
// ServicesToActive) land in the same report. The -N GOMAXPROCS suffix is
// dropped from names.
func ParseGoBench(r io.Reader) (map[string]map[string]float64, error) {
	out := map[string]map[string]float64{}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 4 || !strings.HasPrefix(fields[0], "Benchmark") {
			continue
		}
		name := fields[0]
		if i := strings.LastIndex(name, "-"); i > 0 {
			if _, err := strconv.Atoi(name[i+1:]); err == nil {
				name = name[:i]
			}
		}
		metrics := map[string]float64{}
		// fields[1] is the iteration count; then value/unit pairs.
		for i := 2; i+1 < len(fields); i += 2 {
			v, err := strconv.ParseFloat(fields[i], 64)
			if err != nil {
				break
			}
			metrics[fields[i+1]] = v
		}
		out[name] = metrics
	}
	return out, sc.Err()
}
