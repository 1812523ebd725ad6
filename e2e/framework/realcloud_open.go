package framework

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
)

// OpenRealCloud connects to a real cloud that is already running with its
// state in dir (`make realcloud`'s directory), without starting or stopping
// anything. The caller must be inside that cloud's network namespace.
func OpenRealCloud(dir string) (*RealCloud, error) {
	path := filepath.Join(dir, "cloud.json")
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("real cloud: %w", err)
	}
	var info RealCloudInfo
	if err := json.Unmarshal(data, &info); err != nil {
		return nil, fmt.Errorf("real cloud: %s: %w", path, err)
	}
	return newRealCloud(context.Background(), dir, info)
}
