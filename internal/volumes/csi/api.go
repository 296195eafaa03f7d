package csi

import (
	"context"

	authnv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodelet/nodelet/internal/lib/kubeclient"
)

// clientAPI reads CSIDrivers, VolumeAttachments and the volumes' secrets straight from the
// API server (the node authorizer lets a node read those its volumes reference).
type clientAPI struct{ client kubeclient.Interface }

// NewAPI reads through client.
func NewAPI(client kubeclient.Interface) API { return clientAPI{client} }

func (a clientAPI) CSIDriver(ctx context.Context, name string) (*storagev1.CSIDriver, error) {
	d, err := a.client.StorageV1().CSIDrivers().Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return d, err
}

func (a clientAPI) VolumeAttachment(ctx context.Context, name string) (*storagev1.VolumeAttachment, error) {
	return a.client.StorageV1().VolumeAttachments().Get(ctx, name, metav1.GetOptions{})
}

func (a clientAPI) Secret(ctx context.Context, namespace, name string) (*v1.Secret, error) {
	return a.client.CoreV1().Secrets(namespace).Get(ctx, name, metav1.GetOptions{})
}

func (a clientAPI) CreateServiceAccountToken(ctx context.Context, namespace, name string, req *authnv1.TokenRequest) (*authnv1.TokenRequest, error) {
	return a.client.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, name, req, metav1.CreateOptions{})
}
