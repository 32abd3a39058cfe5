package kubernetes

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
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
