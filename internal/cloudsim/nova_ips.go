package cloudsim

import (
	"maps"
	"net/http"
	"time"
)

// Nova's smaller server sub-resources: addresses by network (/ips) and
// metadata updates, which tests use to change what the CCM reads.

func (s *Sim) serverIPs(w http.ResponseWriter, r *http.Request, st *state, sv *server) {
	byNet := map[string][]any{}
	for _, a := range st.addresses(sv, nil) {
		byNet[a.Network] = append(byNet[a.Network], map[string]any{"addr": a.IP, "version": a.Version})
	}
	if n := r.PathValue("network"); n != "" {
		list, ok := byNet[n]
		if !ok {
			novaError(w, http.StatusNotFound, "Instance is not a member of specified network")
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{n: list})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"addresses": byNet})
}

type metadataReq struct {
	Metadata map[string]string `json:"metadata"`
}

func (s *Sim) setServerMetadata(reset bool) func(http.ResponseWriter, *http.Request, *state, *server, *metadataReq) {
	return func(w http.ResponseWriter, _ *http.Request, _ *state, sv *server, body *metadataReq) {
		if body.Metadata == nil {
			novaError(w, http.StatusBadRequest, "Invalid input for field/attribute metadata.")
			return
		}
		md := maps.Clone(sv.Metadata)
		if reset {
			md = map[string]string{}
		}
		maps.Copy(md, body.Metadata)
		sv.Metadata = md
		sv.Updated = time.Now().UTC()
		writeJSON(w, http.StatusOK, map[string]any{"metadata": maps.Clone(md)})
	}
}
