package kubernetes

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestListNodeAddresses: the Table form (as kube-apiserver serves it to
// kubectl get nodes -o wide) and the NodeList form of older or aggregated
// servers, paged with continue tokens.
func TestListNodeAddresses(t *testing.T) {
	t.Parallel()
	var queries []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/v1/nodes" || r.Method != http.MethodGet {
			http.Error(w, "unexpected "+r.Method+" "+r.URL.Path, http.StatusNotFound)
			return
		}
		if got := r.Header.Get("Accept"); !strings.HasPrefix(got, "application/json;as=Table;v=v1;g=meta.k8s.io") {
			http.Error(w, "accept "+got, http.StatusNotAcceptable)
			return
		}
		queries = append(queries, r.URL.RawQuery)
		switch r.URL.Query().Get("continue") {
		case "":
			w.Write([]byte(`{"kind":"Table","apiVersion":"meta.k8s.io/v1","metadata":{"continue":"page2"},
			 "columnDefinitions":[{"name":"Name"},{"name":"Status"},{"name":"Roles"},{"name":"Age"},{"name":"Version"},{"name":"Internal-IP"},{"name":"External-IP"}],
			 "rows":[{"cells":["node-a","Ready","control-plane","5d","v1.37.2","10.0.0.1","<none>"]},
			         {"cells":["node-b","Ready","<none>","5d","v1.37.2","<none>","203.0.113.9"]}]}`))
		case "page2":
			w.Write([]byte(`{"kind":"NodeList","apiVersion":"v1","metadata":{},"items":[
			 {"metadata":{"name":"node-c"},"status":{"addresses":[{"type":"Hostname","address":"node-c"},{"type":"InternalIP","address":"fd00::3"},{"type":"InternalIP","address":"10.0.0.3"}]}}]}`))
		}
	}))
	defer srv.Close()
	c, err := newClient(srv.URL, nil, nil, "t", "", false)
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.ListNodeAddresses(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := []NodeAddress{{"node-a", "10.0.0.1"}, {"node-b", ""}, {"node-c", "fd00::3"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"includeObject=None&limit=500", "continue=page2&includeObject=None&limit=500"}, queries); diff != "" {
		t.Errorf("queries (-want +got):\n%s", diff)
	}
}

// TestListNodeAddressesForbidden: without list nodes in its role, the error
// says what the API server said.
func TestListNodeAddressesForbidden(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusForbidden)
		w.Write([]byte(`{"kind":"Status","reason":"Forbidden","message":"nodes is forbidden: User \"system:serviceaccount:clockwatch:clockwatch\" cannot list resource \"nodes\""}`))
	}))
	defer srv.Close()
	c, _ := newClient(srv.URL, nil, nil, "t", "", false)
	_, err := c.ListNodeAddresses(context.Background())
	if err == nil || !strings.Contains(err.Error(), `cannot list resource \"nodes\"`) && !strings.Contains(err.Error(), `cannot list resource "nodes"`) {
		t.Errorf("err = %v", err)
	}
}
