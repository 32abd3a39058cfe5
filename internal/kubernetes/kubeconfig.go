package kubernetes

import (
	"crypto/tls"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/clockwatch/clockwatch/internal/safefile"
)

// fileSpec is how the client reads each of its files: no FIFO, no device,
// bounded, and links followed only within the file's own directory (a
// projected token is token -> ..data/token; a link to /dev/zero or to an
// unrelated file elsewhere is refused, not sent as a bearer token).
func fileSpec(what string, limit int64) safefile.Spec {
	return safefile.Spec{What: what, Limit: limit, Links: safefile.LinksWithinDir}
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
