package cloudsim

import "net/http"

type octaviaState struct{}

func newOctaviaState() *octaviaState { return &octaviaState{} }

func (s *Sim) routesLoadBalancer(mux *http.ServeMux) {}
func (s *Sim) routesMetadata(mux *http.ServeMux)     {}
