package kubernetes

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"time"
)

// Node is the part of a Node the transport reads.
type Node struct {
	Metadata struct {
		Name string `json:"name"`
		UID  string `json:"uid"`
	} `json:"metadata"`
	Status struct {
		Conditions []Condition `json:"conditions"`
	} `json:"status"`
}

// Condition is a NodeCondition (k8s.io/api/core/v1).
type Condition struct {
	Type               string    `json:"type"`
	Status             string    `json:"status"`
	LastHeartbeatTime  time.Time `json:"lastHeartbeatTime"`
	LastTransitionTime time.Time `json:"lastTransitionTime"`
	Reason             string    `json:"reason"`
	Message            string    `json:"message"`
}

// GetNode reads the Node.
func (c *Client) GetNode(ctx context.Context, name string) (*Node, error) {
	var n Node
	if err := c.do(ctx, http.MethodGet, "/api/v1/nodes/"+url.PathEscape(name), "", nil, &n); err != nil {
		return nil, err
	}
	return &n, nil
}

// PatchNodeCondition sets one condition of the Node's status with a
// strategic merge patch (conditions merge by type: the others are kept).
func (c *Client) PatchNodeCondition(ctx context.Context, name string, cond Condition) error {
	patch, err := json.Marshal(map[string]any{"status": map[string]any{"conditions": []Condition{cond}}})
	if err != nil {
		return err
	}
	return c.do(ctx, http.MethodPatch, "/api/v1/nodes/"+url.PathEscape(name)+"/status", "application/strategic-merge-patch+json", patch, nil)
}

// NodeAddress is a Node's name and its first InternalIP ("" when it has
// none).
type NodeAddress struct {
	Name       string
	InternalIP string
}

// nodePage is the part of a page of the Node list the client reads: a
// Table (meta.k8s.io/v1, the columns kubectl get nodes -o wide shows)
// without the objects, or, from a server that does not serve tables, a
// NodeList.
type nodePage struct {
	Kind     string `json:"kind"`
	Metadata struct {
		Continue string `json:"continue"`
	} `json:"metadata"`
	Columns []struct {
		Name string `json:"name"`
	} `json:"columnDefinitions"`
	Rows []struct {
		Cells []any `json:"cells"`
	} `json:"rows"`
	Items []struct {
		Metadata struct {
			Name string `json:"name"`
		} `json:"metadata"`
		Status struct {
			Addresses []struct {
				Type    string `json:"type"`
				Address string `json:"address"`
			} `json:"addresses"`
		} `json:"status"`
	} `json:"items"`
}

// nodeListPage is how many Nodes one request of ListNodeAddresses asks for.
const nodeListPage = 500

// ListNodeAddresses lists every Node's name and InternalIP (RBAC: list
// nodes). It asks for the Table form without the objects: a row of about
// 200 bytes a Node where the whole Node (its images, conditions and labels)
// is tens of kilobytes; a server that does not serve tables answers with
// the NodeList, which is read too. Pages of 500.
func (c *Client) ListNodeAddresses(ctx context.Context) ([]NodeAddress, error) {
	var out []NodeAddress
	cont := ""
	for {
		q := url.Values{"limit": {fmt.Sprint(nodeListPage)}, "includeObject": {"None"}}
		if cont != "" {
			q.Set("continue", cont)
		}
		var page nodePage
		if err := c.doAccept(ctx, "/api/v1/nodes?"+q.Encode(), "application/json;as=Table;v=v1;g=meta.k8s.io, application/json", &page); err != nil {
			return nil, err
		}
		switch page.Kind {
		case "Table":
			name, ip := -1, -1
			for i, col := range page.Columns {
				switch col.Name {
				case "Name":
					name = i
				case "Internal-IP":
					ip = i
				}
			}
			if name < 0 || ip < 0 {
				return nil, fmt.Errorf("GET /api/v1/nodes: the table has no Name or Internal-IP column")
			}
			for _, r := range page.Rows {
				n := NodeAddress{Name: cell(r.Cells, name), InternalIP: cell(r.Cells, ip)}
				if n.InternalIP == "<none>" {
					n.InternalIP = ""
				}
				out = append(out, n)
			}
		default:
			for _, it := range page.Items {
				n := NodeAddress{Name: it.Metadata.Name}
				for _, a := range it.Status.Addresses {
					if a.Type == "InternalIP" && n.InternalIP == "" {
						n.InternalIP = a.Address
					}
				}
				out = append(out, n)
			}
		}
		if cont = page.Metadata.Continue; cont == "" {
			return out, nil
		}
	}
}

func cell(cells []any, i int) string {
	if i >= len(cells) {
		return ""
	}
	s, _ := cells[i].(string)
	return s
}
