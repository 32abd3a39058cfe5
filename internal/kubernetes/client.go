package kubernetes

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/clockwatch/clockwatch/internal/safefile"
)

// In a pod, the service account's credentials and the API server's address
// (Kubernetes' "in-cluster config").
const (
	serviceAccountDir = "/var/run/secrets/kubernetes.io/serviceaccount"
	requestTimeout    = 10 * time.Second
)

// Limits of what is read from files and answers. A service account token
// is about a kilobyte; a kubeconfig with many clusters some tens; a CA
// bundle some hundreds.
const (
	maxTokenBytes      = 64 << 10
	maxKubeconfigBytes = 1 << 20
	maxPEMBytes        = 1 << 20
	// maxAnswerBytes bounds a 2xx answer (a Node with its image list);
	// maxErrorBytes an error's body, of which at most MaxExcerpt bytes
	// reach an error message and so the log.
	maxAnswerBytes = 4 << 20
	maxErrorBytes  = 64 << 10
	// MaxExcerpt is the most bytes of an answer's body an error quotes.
	MaxExcerpt = 512
)

// fileSpec is how the client reads each of its files: no FIFO, no device,
// bounded, and links followed only within the file's own directory (a
// projected token is token -> ..data/token; a link to /dev/zero or to an
// unrelated file elsewhere is refused, not sent as a bearer token).
func fileSpec(what string, limit int64) safefile.Spec {
	return safefile.Spec{What: what, Limit: limit, Links: safefile.LinksWithinDir}
}

// Client is a REST client for the few requests the transport makes. The
// bearer token is re-read from its file for each request: a projected
// service account token is rotated by the kubelet.
type Client struct {
	base      *url.URL
	http      *http.Client
	token     string
	tokenFile string
	userAgent string
}

// APIError is an API server's refusal: the HTTP status and its Status
// object's message.
type APIError struct {
	Code    int
	Reason  string
	Message string
	Request string
}

func (e *APIError) Error() string {
	return fmt.Sprintf("%s: the API server answered %d %s: %s", e.Request, e.Code, e.Reason, e.Message)
}

// InClusterConfig reads the pod's service account and the API server's
// address from the environment (KUBERNETES_SERVICE_HOST and _PORT).
func InClusterConfig(getenv func(string) string, dir string) (*Client, error) {
	host, port := getenv("KUBERNETES_SERVICE_HOST"), getenv("KUBERNETES_SERVICE_PORT")
	if host == "" || port == "" {
		return nil, errors.New("not in a pod (KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are not set): give --kubernetes.kubeconfig")
	}
	if dir == "" {
		dir = serviceAccountDir
	}
	ca, err := safefile.Read(fileSpec("the service account's CA", maxPEMBytes), filepath.Join(dir, "ca.crt"))
	if err != nil {
		return nil, fmt.Errorf("%w (is automountServiceAccountToken off?)", err)
	}
	tokenFile := filepath.Join(dir, "token")
	if _, err := readToken(tokenFile); err != nil {
		return nil, err
	}
	return newClient("https://"+net.JoinHostPort(host, port), ca, nil, "", tokenFile, false)
}

// kubeconfig is the part of a kubeconfig file the client reads.
type kubeconfig struct {
	CurrentContext string `yaml:"current-context"`
	Clusters       []struct {
		Name    string `yaml:"name"`
		Cluster struct {
			Server                   string `yaml:"server"`
			CertificateAuthority     string `yaml:"certificate-authority"`
			CertificateAuthorityData string `yaml:"certificate-authority-data"`
			InsecureSkipTLSVerify    bool   `yaml:"insecure-skip-tls-verify"`
		} `yaml:"cluster"`
	} `yaml:"clusters"`
	Contexts []struct {
		Name    string `yaml:"name"`
		Context struct {
			Cluster string `yaml:"cluster"`
			User    string `yaml:"user"`
		} `yaml:"context"`
	} `yaml:"contexts"`
	Users []struct {
		Name string `yaml:"name"`
		User struct {
			Token                 string `yaml:"token"`
			TokenFile             string `yaml:"tokenFile"`
			ClientCertificate     string `yaml:"client-certificate"`
			ClientCertificateData string `yaml:"client-certificate-data"`
			ClientKey             string `yaml:"client-key"`
			ClientKeyData         string `yaml:"client-key-data"`
			// Credentials clockwatch cannot use: named only to refuse
			// them rather than send requests without credentials.
			Exec         any    `yaml:"exec"`
			AuthProvider any    `yaml:"auth-provider"`
			Username     string `yaml:"username"`
			Password     string `yaml:"password"`
		} `yaml:"user"`
	} `yaml:"users"`
}

// KubeconfigClient reads a kubeconfig file's current context: its
// cluster's server and CA, its user's token, token file or client
// certificate. A context must name a user the file has, and that user must
// have one of those credentials: exec plugins, auth providers and basic
// auth are refused (give a token), never ignored into requests without
// credentials.
func KubeconfigClient(path string) (*Client, error) {
	b, err := safefile.Read(fileSpec("the kubeconfig", maxKubeconfigBytes), path)
	if err != nil {
		return nil, fmt.Errorf("--kubernetes.kubeconfig: %w", err)
	}
	var kc kubeconfig
	if err := yaml.Unmarshal(b, &kc); err != nil {
		return nil, fmt.Errorf("--kubernetes.kubeconfig %s: %w", path, err)
	}
	fail := func(format string, a ...any) error {
		return fmt.Errorf("--kubernetes.kubeconfig %s: "+format, append([]any{path}, a...)...)
	}
	if kc.CurrentContext == "" {
		return nil, fail("no current-context")
	}
	var clusterName, userName string
	found := false
	for _, c := range kc.Contexts {
		if c.Name == kc.CurrentContext {
			clusterName, userName, found = c.Context.Cluster, c.Context.User, true
		}
	}
	if !found {
		return nil, fail("current-context %q is not among its contexts", kc.CurrentContext)
	}
	rel := func(p string) string {
		if p == "" || filepath.IsAbs(p) {
			return p
		}
		return filepath.Join(filepath.Dir(path), p)
	}
	data := func(inline, file, what string) ([]byte, error) {
		if inline != "" {
			d, err := base64.StdEncoding.DecodeString(inline)
			if err != nil {
				return nil, fail("%s: %v", what, err)
			}
			return d, nil
		}
		if file == "" {
			return nil, nil
		}
		d, err := safefile.Read(fileSpec("the "+what, maxPEMBytes), rel(file))
		if err != nil {
			return nil, fail("%v", err)
		}
		return d, nil
	}
	var server string
	var ca []byte
	insecure := false
	found = false
	for _, c := range kc.Clusters {
		if c.Name != clusterName {
			continue
		}
		found = true
		server, insecure = c.Cluster.Server, c.Cluster.InsecureSkipTLSVerify
		if ca, err = data(c.Cluster.CertificateAuthorityData, c.Cluster.CertificateAuthority, "certificate-authority"); err != nil {
			return nil, err
		}
	}
	if !found || server == "" {
		return nil, fail("no server for cluster %q of context %q", clusterName, kc.CurrentContext)
	}
	var cert *tls.Certificate
	var token, tokenFile string
	if userName == "" {
		return nil, fail("context %q names no user: clockwatch needs credentials (a token, a tokenFile or a client certificate)", kc.CurrentContext)
	}
	found = false
	for _, u := range kc.Users {
		if u.Name != userName {
			continue
		}
		found = true
		switch {
		case u.User.Exec != nil:
			return nil, fail("user %q authenticates with an exec plugin, which clockwatch does not run: give it a token or tokenFile (a ServiceAccount's) or a client certificate", userName)
		case u.User.AuthProvider != nil:
			return nil, fail("user %q authenticates with an auth-provider, which clockwatch does not support: give it a token or tokenFile (a ServiceAccount's) or a client certificate", userName)
		case u.User.Username != "" || u.User.Password != "":
			return nil, fail("user %q authenticates with a username and password (basic auth), which clockwatch does not send: give it a token or tokenFile or a client certificate", userName)
		case u.User.Token == "" && u.User.TokenFile == "" && u.User.ClientCertificate == "" && u.User.ClientCertificateData == "":
			return nil, fail("user %q has no credentials clockwatch can use: give it a token, a tokenFile or a client certificate", userName)
		}
		token, tokenFile = u.User.Token, rel(u.User.TokenFile)
		if tokenFile != "" {
			if _, err := readToken(tokenFile); err != nil {
				return nil, fail("user %q: %v", userName, err)
			}
		}
		crt, err := data(u.User.ClientCertificateData, u.User.ClientCertificate, "client-certificate")
		if err != nil {
			return nil, err
		}
		key, err := data(u.User.ClientKeyData, u.User.ClientKey, "client-key")
		if err != nil {
			return nil, err
		}
		if crt != nil {
			c, err := tls.X509KeyPair(crt, key)
			if err != nil {
				return nil, fail("user %q's client certificate: %v", userName, err)
			}
			cert = &c
		}
	}
	if !found {
		return nil, fail("context %q names user %q, which is not among its users: clockwatch would send requests without credentials", kc.CurrentContext, userName)
	}
	return newClient(server, ca, cert, token, tokenFile, insecure)
}

// readToken reads a bearer token from its file: a regular file (links only
// within its directory), at most maxTokenBytes, not empty.
func readToken(path string) (string, error) {
	b, err := safefile.Read(fileSpec("the bearer token file", maxTokenBytes), path)
	if err != nil {
		return "", err
	}
	tok := strings.TrimSpace(string(b))
	if tok == "" {
		return "", fmt.Errorf("the bearer token file %s is empty", path)
	}
	return tok, nil
}

// loopback reports whether host (a URL's host, without the port) is this
// machine: 127.0.0.0/8, ::1 or localhost.
func loopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func newClient(server string, ca []byte, cert *tls.Certificate, token, tokenFile string, insecure bool) (*Client, error) {
	u, err := url.Parse(server)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, fmt.Errorf("API server %q: want an https:// URL (or http:// to a loopback address: 127.0.0.1, ::1, localhost)", server)
	}
	if u.Scheme == "http" && !loopback(u.Hostname()) {
		return nil, fmt.Errorf("API server %s: plain http:// is accepted only to a loopback address (127.0.0.1, ::1, localhost): the bearer token would cross the network in clear; use https://", server)
	}
	tc := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: insecure} //nolint:gosec // only when the kubeconfig says so
	if len(ca) > 0 {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(ca) {
			return nil, fmt.Errorf("API server %s: the CA holds no PEM certificate", server)
		}
		tc.RootCAs = pool
	}
	if cert != nil {
		tc.Certificates = []tls.Certificate{*cert}
	}
	tr := &http.Transport{TLSClientConfig: tc, Proxy: nil, MaxIdleConns: 2, IdleConnTimeout: 90 * time.Second,
		TLSHandshakeTimeout: 5 * time.Second, ResponseHeaderTimeout: requestTimeout,
		DialContext: (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext}
	// A redirect is never followed: a 301/302 turned the condition's
	// PATCH into a GET that counted as a success, and a 307 to http://
	// sent the token in clear. do() reports it, naming the Location.
	noRedirect := func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &Client{base: u, http: &http.Client{Transport: tr, Timeout: requestTimeout, CheckRedirect: noRedirect},
		token: token, tokenFile: tokenFile, userAgent: "clockwatch"}, nil
}

// RedirectError is an API server's answer with a redirect, which the client
// never follows.
type RedirectError struct {
	Code     int
	Location string
	Request  string
}

func (e *RedirectError) Error() string {
	return fmt.Sprintf("%s: the API server answered %d with a redirect to %q: not followed (clockwatch never follows a redirect: it could change the request or send the token elsewhere; give the API server's own address)",
		e.Request, e.Code, e.Location)
}

// Excerpt returns at most MaxExcerpt bytes of b as text, saying how much
// was left out: an error body can be megabytes, and it ends up in the log.
func Excerpt(b []byte) string {
	s := strings.TrimSpace(string(b))
	if len(s) <= MaxExcerpt {
		return s
	}
	cut := MaxExcerpt
	for cut > 0 && !utf8RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "… (" + strconv.Itoa(len(s)-cut) + " more bytes)"
}

func utf8RuneStart(b byte) bool { return b&0xC0 != 0x80 }

// SetUserAgent sets the User-Agent (the API server's audit log shows it).
func (c *Client) SetUserAgent(ua string) { c.userAgent = ua }

// do sends one request and decodes a 2xx answer into out (when not nil).
func (c *Client) do(ctx context.Context, method, path, contentType string, body []byte, out any) error {
	return c.request(ctx, method, path, contentType, "application/json", body, out)
}

// doAccept GETs path asking for the media types of accept.
func (c *Client) doAccept(ctx context.Context, path, accept string, out any) error {
	return c.request(ctx, http.MethodGet, path, "", accept, nil, out)
}

func (c *Client) request(ctx context.Context, method, path, contentType, accept string, body []byte, out any) error {
	what := method + " " + path
	u := *c.base
	p, query, _ := strings.Cut(path, "?")
	u.Path, u.RawQuery = strings.TrimSuffix(u.Path, "/")+p, query
	req, err := http.NewRequestWithContext(ctx, method, u.String(), bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	req.Header.Set("Accept", accept)
	req.Header.Set("User-Agent", c.userAgent)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	tok := c.token
	if c.tokenFile != "" {
		// Re-read at each request: the kubelet rotates a projected token.
		if tok, err = readToken(c.tokenFile); err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
	}
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 == 3 {
		return &RedirectError{Code: resp.StatusCode, Location: Excerpt([]byte(resp.Header.Get("Location"))), Request: what}
	}
	limit := int64(maxAnswerBytes)
	if resp.StatusCode/100 != 2 {
		limit = maxErrorBytes
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, limit))
	if err != nil {
		return fmt.Errorf("%s: reading the answer: %w", what, err)
	}
	if resp.StatusCode/100 != 2 {
		var st struct {
			Reason  string `json:"reason"`
			Message string `json:"message"`
		}
		_ = json.Unmarshal(b, &st)
		if st.Message == "" {
			st.Message = string(b)
		}
		return &APIError{Code: resp.StatusCode, Reason: Excerpt([]byte(st.Reason)), Message: Excerpt([]byte(st.Message)), Request: what}
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			return fmt.Errorf("%s: decoding the answer: %w", what, err)
		}
	}
	return nil
}

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

// Event is a core/v1 Event (the fields the transport sets).
type Event struct {
	APIVersion     string          `json:"apiVersion"`
	Kind           string          `json:"kind"`
	Metadata       EventMeta       `json:"metadata"`
	InvolvedObject ObjectReference `json:"involvedObject"`
	Reason         string          `json:"reason"`
	Message        string          `json:"message"`
	Source         EventSource     `json:"source"`
	FirstTimestamp time.Time       `json:"firstTimestamp"`
	LastTimestamp  time.Time       `json:"lastTimestamp"`
	Count          int32           `json:"count"`
	Type           string          `json:"type"`
	// ReportingController and ReportingInstance name who reports.
	ReportingController string `json:"reportingComponent"`
	ReportingInstance   string `json:"reportingInstance"`
}

// EventMeta is an Event's metadata.
type EventMeta struct {
	Name      string `json:"name"`
	Namespace string `json:"namespace"`
}

// ObjectReference names the Node an Event is about.
type ObjectReference struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Name       string `json:"name"`
	UID        string `json:"uid,omitempty"`
}

// EventSource is an Event's source.
type EventSource struct {
	Component string `json:"component"`
	Host      string `json:"host"`
}

// CreateEvent posts a new Event.
func (c *Client) CreateEvent(ctx context.Context, ev Event) error {
	body, err := json.Marshal(ev)
	if err != nil {
		return err
	}
	return c.do(ctx, http.MethodPost, "/api/v1/namespaces/"+url.PathEscape(ev.Metadata.Namespace)+"/events", "application/json", body, nil)
}

// PatchEventCount raises an Event's count and its last time (a repeat).
func (c *Client) PatchEventCount(ctx context.Context, namespace, name string, count int32, last time.Time) error {
	patch, err := json.Marshal(map[string]any{"count": count, "lastTimestamp": last})
	if err != nil {
		return err
	}
	return c.do(ctx, http.MethodPatch, "/api/v1/namespaces/"+url.PathEscape(namespace)+"/events/"+url.PathEscape(name),
		"application/strategic-merge-patch+json", patch, nil)
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
