package cloudsim

import "net/http"

func (s *Sim) routesMetadata(mux *http.ServeMux) {}
