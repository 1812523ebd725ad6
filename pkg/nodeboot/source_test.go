package nodeboot

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

const node1Dir = "testdata/configdrive/node-1"

func readFixture(t *testing.T, dir, file string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, latestPath, file))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// fakeMetadata serves node-1's documents; failFirst requests answer 503,
// hang makes every request block until the client gives up.
type fakeMetadata struct {
	t         *testing.T
	failFirst int32
	hang      bool
	missing   string // a document that answers 404
	calls     atomic.Int32
	header    atomic.Value
}

func (f *fakeMetadata) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n := f.calls.Add(1)
	f.header.Store(r.Header.Get(InstanceIDHeader))
	if f.hang {
		<-r.Context().Done()
		return
	}
	if n <= f.failFirst {
		http.Error(w, "metadata proxy unavailable", http.StatusServiceUnavailable)
		return
	}
	file := strings.TrimPrefix(r.URL.Path, "/"+latestPath+"/")
	if file == f.missing || (file != metaDataFile && file != networkDataFile) {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(readFixture(f.t, node1Dir, file))
}

type fakeBehaviour struct {
	failFirst int32
	hang      bool
	missing   string
}

func testConfig(url string) Config {
	cfg := DefaultConfig()
	cfg.SearchOrder = []string{SourceMetadataService}
	cfg.MetadataURL = url
	cfg.RequestTimeout = 200 * time.Millisecond
	cfg.Attempts = 3
	cfg.RetryBackoff = 10 * time.Millisecond
	cfg.Interfaces = failingInterfaces
	cfg.DiskByLabelDir = "testdata/no-such-dir"
	cfg.Print = true
	return cfg
}

func TestMetadataService(t *testing.T) {
	for _, tc := range []struct {
		name      string
		fake      fakeBehaviour
		wantErr   error
		wantCalls int32
		errParts  []string
	}{
		{name: "answers on the first try", wantCalls: 2},
		{name: "two 503s are retried", fake: fakeBehaviour{failFirst: 2}, wantCalls: 4},
		{name: "503 on every attempt gives up after the bounded attempts",
			fake: fakeBehaviour{failFirst: 100}, wantCalls: 3, wantErr: ErrSourceUnavailable,
			errParts: []string{"3 of at most 3 attempts", "HTTP 503", "meta_data.json"}},
		{name: "a hanging server times out per request and gives up",
			fake: fakeBehaviour{hang: true}, wantCalls: 3, wantErr: ErrSourceUnavailable, errParts: []string{"meta_data.json"}},
		{name: "404 on meta_data.json is not retried",
			fake: fakeBehaviour{missing: metaDataFile}, wantCalls: 1, wantErr: ErrSourceUnavailable, errParts: []string{"HTTP 404"}},
		{name: "404 on network_data.json names it",
			fake: fakeBehaviour{missing: networkDataFile}, wantCalls: 2, wantErr: ErrSourceUnavailable, errParts: []string{"network_data.json", "HTTP 404"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeMetadata{t: t, failFirst: tc.fake.failFirst, hang: tc.fake.hang, missing: tc.fake.missing}
			srv := httptest.NewServer(f)
			defer srv.Close()
			cfg := testConfig(srv.URL)
			cfg.MetadataInstanceID = "3c5a4d0e-7f0b-4e7e-9d7a-1b2c3d4e5f60"
			start := time.Now()
			s, err := Resolve(context.Background(), cfg)
			if elapsed := time.Since(start); elapsed > 3*time.Second {
				t.Errorf("took %s; timeouts are not bounded", elapsed)
			}
			if got := f.calls.Load(); got != tc.wantCalls {
				t.Errorf("requests = %d, want %d", got, tc.wantCalls)
			}
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("err = %v, want %v", err, tc.wantErr)
				}
				for _, p := range append(tc.errParts, srv.URL) {
					if !strings.Contains(err.Error(), p) {
						t.Errorf("error %q does not mention %q", err, p)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if s.ProviderID != "openstack:///3c5a4d0e-7f0b-4e7e-9d7a-1b2c3d4e5f60" || s.NodeIP() != "10.0.0.11" {
				t.Errorf("got %s %s", s.ProviderID, s.NodeIP())
			}
			if h := f.header.Load(); h != cfg.MetadataInstanceID {
				t.Errorf("%s header = %v", InstanceIDHeader, h)
			}
		})
	}
}

func TestMetadataServiceStopsWhenContextIsCancelled(t *testing.T) {
	f := &fakeMetadata{t: t, hang: true}
	srv := httptest.NewServer(f)
	defer srv.Close()
	cfg := testConfig(srv.URL)
	cfg.RequestTimeout = time.Minute
	cfg.Attempts = 100
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := Resolve(ctx, cfg)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want the context's deadline", err)
	}
	if elapsed := time.Since(start); elapsed > 2*time.Second {
		t.Errorf("took %s after the context ended", elapsed)
	}
}

// fakeMounter "mounts" a fixture directory by copying it.
type fakeMounter struct {
	from             string
	mounted, unmount []string
}

func (m *fakeMounter) MountReadOnly(_ context.Context, device, dir string) error {
	m.mounted = append(m.mounted, device)
	return os.CopyFS(dir, os.DirFS(m.from))
}

func (m *fakeMounter) Unmount(_ context.Context, dir string) error {
	m.unmount = append(m.unmount, dir)
	return os.RemoveAll(dir) // the mount point itself is removed afterwards
}

func TestConfigDrive(t *testing.T) {
	t.Run("a given directory is read", func(t *testing.T) {
		cfg := testConfig("")
		cfg.SearchOrder = []string{SourceConfigDrive}
		cfg.ConfigDriveDir = node1Dir
		s, err := Resolve(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		if s.Instance.Source != SourceConfigDrive || s.Instance.Meta.Name != "node-1" || s.NodeIP() != "10.0.0.11" {
			t.Errorf("got %+v %s", s.Instance, s.NodeIP())
		}
	})
	t.Run("the device labelled config-2 is mounted read-only and unmounted", func(t *testing.T) {
		byLabel := t.TempDir()
		if err := os.WriteFile(filepath.Join(byLabel, "config-2"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		m := &fakeMounter{from: node1Dir}
		cfg := testConfig("")
		cfg.SearchOrder = []string{SourceConfigDrive}
		cfg.DiskByLabelDir = byLabel
		cfg.Mounter = m
		s, err := Resolve(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		if s.Instance.Origin != filepath.Join(byLabel, "config-2") || len(m.mounted) != 1 || len(m.unmount) != 1 {
			t.Errorf("origin %s, mounted %v, unmounted %v", s.Instance.Origin, m.mounted, m.unmount)
		}
	})
	t.Run("no config drive falls through to the metadata service", func(t *testing.T) {
		srv := httptest.NewServer(&fakeMetadata{t: t})
		defer srv.Close()
		cfg := testConfig(srv.URL)
		cfg.SearchOrder = []string{SourceConfigDrive, SourceMetadataService}
		s, err := Resolve(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		if s.Instance.Source != SourceMetadataService {
			t.Errorf("source = %s", s.Instance.Source)
		}
	})
	t.Run("no source at all names every source", func(t *testing.T) {
		srv := httptest.NewServer(&fakeMetadata{t: t, missing: metaDataFile})
		defer srv.Close()
		cfg := testConfig(srv.URL)
		cfg.SearchOrder = []string{SourceConfigDrive, SourceMetadataService}
		_, err := Resolve(context.Background(), cfg)
		if !errors.Is(err, ErrSourceUnavailable) {
			t.Fatalf("err = %v", err)
		}
		for _, p := range []string{"source configDrive", "config-2", "source metadataService", "HTTP 404"} {
			if !strings.Contains(err.Error(), p) {
				t.Errorf("error %q does not mention %q", err, p)
			}
		}
	})
}

func TestSourcesAreCrossChecked(t *testing.T) {
	for _, tc := range []struct {
		name     string
		dir      string
		cross    bool
		wantErr  error
		errParts []string
	}{
		{name: "agreeing sources are accepted", dir: node1Dir, cross: true},
		{name: "config drive and metadata service disagreeing on uuid are refused", dir: "testdata/configdrive/other-uuid", cross: true,
			wantErr: ErrInconsistent, errParts: []string{`field "uuid"`, "configDrive", "aaaaaaaa-", "metadataService", "3c5a4d0e-"}},
		{name: "disagreement is not looked for without cross-check", dir: "testdata/configdrive/other-uuid"},
		{name: "a source without uuid is refused, not skipped", dir: "testdata/configdrive/no-uuid", cross: true,
			wantErr: ErrInvalidMetadata, errParts: []string{"source configDrive", `field "uuid"`, "no-uuid/openstack/latest/meta_data.json"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(&fakeMetadata{t: t})
			defer srv.Close()
			cfg := testConfig(srv.URL)
			cfg.SearchOrder = []string{SourceConfigDrive, SourceMetadataService}
			cfg.ConfigDriveDir = tc.dir
			cfg.CrossCheck = tc.cross
			_, err := Resolve(context.Background(), cfg)
			if tc.wantErr == nil {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("err = %v, want %v", err, tc.wantErr)
			}
			for _, p := range tc.errParts {
				if !strings.Contains(err.Error(), p) {
					t.Errorf("error %q does not mention %q", err, p)
				}
			}
		})
	}
}

func TestNameMismatchIsRefused(t *testing.T) {
	a := &Instance{Source: SourceConfigDrive, Origin: "/mnt", Meta: MetaData{UUID: "u", Name: "node-1"}}
	b := &Instance{Source: SourceMetadataService, Origin: "http://x", Meta: MetaData{UUID: "u", Name: "node-2"}}
	err := compare(a, b)
	if !errors.Is(err, ErrInconsistent) || !strings.Contains(err.Error(), `field "name"`) {
		t.Fatalf("err = %v", err)
	}
}

// The simulator and Neutron's metadata proxy tell instances apart by source
// address; --metadata-source-ip must be the one the server sees.
func TestMetadataRequestsComeFromTheSourceIP(t *testing.T) {
	var remote atomic.Value
	f := &fakeMetadata{t: t}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		remote.Store(r.RemoteAddr)
		f.ServeHTTP(w, r)
	}))
	defer srv.Close()
	cfg := testConfig(srv.URL)
	cfg.MetadataSourceIP = "127.0.0.2" // all of 127/8 is local on Linux
	if _, err := Resolve(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	if got, _ := remote.Load().(string); !strings.HasPrefix(got, "127.0.0.2:") {
		t.Errorf("server saw the request from %q, want 127.0.0.2", got)
	}
}
