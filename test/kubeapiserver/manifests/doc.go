// Package manifests renders clockwatch's Kubernetes manifests as users do
// (kubectl apply -k, helm install) and decodes every object strictly, so that
// a misspelt field fails here and not on a user's cluster. Render is also the
// apiserver test's input.
package manifests
