package manifests

import (
	"bytes"
	"encoding/json"
	"fmt"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
)

// Object is one decoded manifest.
type Object struct {
	Kind, Name, Namespace string
	// Value is the typed object (*appsv1.DaemonSet, ...).
	Value any
	// JSON is the object as rendered.
	JSON []byte
}

// Decode decodes a JSON object into its k8s.io/api (or prometheus-operator)
// type, refusing unknown fields and kinds.
func Decode(doc []byte) (Object, error) {
	var tm struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Metadata   struct {
			Name      string `json:"name"`
			Namespace string `json:"namespace"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(doc, &tm); err != nil {
		return Object{}, err
	}
	var v any
	switch tm.APIVersion + "/" + tm.Kind {
	case "v1/Namespace":
		v = &corev1.Namespace{}
	case "v1/ServiceAccount":
		v = &corev1.ServiceAccount{}
	case "v1/Pod":
		v = &corev1.Pod{}
	case "v1/ConfigMap":
		v = &corev1.ConfigMap{}
	case "apps/v1/DaemonSet":
		v = &appsv1.DaemonSet{}
	case "rbac.authorization.k8s.io/v1/ClusterRole":
		v = &rbacv1.ClusterRole{}
	case "rbac.authorization.k8s.io/v1/ClusterRoleBinding":
		v = &rbacv1.ClusterRoleBinding{}
	case "monitoring.coreos.com/v1/PodMonitor":
		v = &monitoringv1.PodMonitor{}
	case "monitoring.coreos.com/v1/PrometheusRule":
		v = &monitoringv1.PrometheusRule{}
	default:
		return Object{}, fmt.Errorf("%s %s/%s: not a kind clockwatch ships", tm.APIVersion, tm.Kind, tm.Metadata.Name)
	}
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return Object{}, fmt.Errorf("%s %s: %w", tm.Kind, tm.Metadata.Name, err)
	}
	return Object{Kind: tm.Kind, Name: tm.Metadata.Name, Namespace: tm.Metadata.Namespace, Value: v, JSON: doc}, nil
}
