package kubeclient

import (
	"context"

	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	resourcev1beta1 "k8s.io/api/resource/v1beta1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
)

// The interfaces below are the slice of the API nodelet uses. Their methods have exactly the
// signatures of client-go's typed clients, so those clients (and the fake clientset in tests)
// satisfy them, while the binary links only the API groups it talks to instead of the
// clientset for every group.

// Interface is nodelet's API client: the groups it reads and writes.
type Interface interface {
	CoreV1() CoreV1Interface
	CoordinationV1() CoordinationV1Interface
	AuthenticationV1() AuthenticationV1Interface
	AuthorizationV1() AuthorizationV1Interface
	NodeV1() NodeV1Interface
	CertificatesV1() CertificatesV1Interface
	StorageV1() StorageV1Interface
	ResourceV1beta1() ResourceV1beta1Interface
}

// ResourceV1beta1Interface holds the resource.k8s.io/v1beta1 resources the DRA manager uses.
type ResourceV1beta1Interface interface {
	ResourceClaims(namespace string) ResourceClaimInterface
	ResourceSlices() ResourceSliceInterface
}

// ResourceClaimInterface: a pod's claims must be allocated and reserved for it before they are
// prepared.
type ResourceClaimInterface interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (*resourcev1beta1.ResourceClaim, error)
}

// ResourceSliceInterface: the node's slices of a DRA driver that went away are deleted.
type ResourceSliceInterface interface {
	DeleteCollection(ctx context.Context, opts metav1.DeleteOptions, listOpts metav1.ListOptions) error
}

// StorageV1Interface holds the storage.k8s.io/v1 resources the CSI volume code uses.
type StorageV1Interface interface {
	CSINodes() CSINodeInterface
	CSIDrivers() CSIDriverInterface
	VolumeAttachments() VolumeAttachmentInterface
}

// CSINodeInterface: the CSI driver registry keeps this node's CSINode listing its drivers.
type CSINodeInterface interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (*storagev1.CSINode, error)
	Create(ctx context.Context, csiNode *storagev1.CSINode, opts metav1.CreateOptions) (*storagev1.CSINode, error)
	Update(ctx context.Context, csiNode *storagev1.CSINode, opts metav1.UpdateOptions) (*storagev1.CSINode, error)
}

// CSIDriverInterface: a CSI volume's set-up reads its driver's options (attachRequired,
// podInfoOnMount, fsGroupPolicy).
type CSIDriverInterface interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (*storagev1.CSIDriver, error)
}

// VolumeAttachmentInterface: a CSI volume whose driver needs attaching waits for its
// VolumeAttachment to be attached.
type VolumeAttachmentInterface interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (*storagev1.VolumeAttachment, error)
}

// CertificatesV1Interface holds the certificates.k8s.io/v1 resources nodelet uses.
type CertificatesV1Interface interface {
	CertificateSigningRequests() CertificateSigningRequestInterface
}

// CertificateSigningRequestInterface: TLS bootstrap and certificate rotation request their
// certificates and wait for them to be issued.
type CertificateSigningRequestInterface interface {
	Create(ctx context.Context, csr *certificatesv1.CertificateSigningRequest, opts metav1.CreateOptions) (*certificatesv1.CertificateSigningRequest, error)
	Get(ctx context.Context, name string, opts metav1.GetOptions) (*certificatesv1.CertificateSigningRequest, error)
}

// NodeV1Interface holds the node.k8s.io/v1 resources nodelet uses.
type NodeV1Interface interface {
	RuntimeClasses() RuntimeClassInterface
}

// RuntimeClassInterface: the RuntimeClass manager watches them to map runtimeClassName to a
// CRI handler.
type RuntimeClassInterface interface {
	List(ctx context.Context, opts metav1.ListOptions) (*nodev1.RuntimeClassList, error)
	Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
}

// CoreV1Interface holds the core/v1 resources nodelet uses.
type CoreV1Interface interface {
	Pods(namespace string) PodInterface
	Nodes() NodeInterface
	Events(namespace string) EventInterface
	ConfigMaps(namespace string) ConfigMapInterface
	Secrets(namespace string) SecretInterface
	ServiceAccounts(namespace string) ServiceAccountInterface
	Services(namespace string) ServiceInterface
	PersistentVolumeClaims(namespace string) PersistentVolumeClaimInterface
	PersistentVolumes() PersistentVolumeInterface
}

// PersistentVolumeClaimInterface: the runtime resolves a pod's claims to mount them.
type PersistentVolumeClaimInterface interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (*v1.PersistentVolumeClaim, error)
	// Patch of the status subresource records a volume grown on the node.
	Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresources ...string) (*v1.PersistentVolumeClaim, error)
}

// PersistentVolumeInterface: the runtime reads the volume a claim is bound to.
type PersistentVolumeInterface interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (*v1.PersistentVolume, error)
}

// ServiceInterface: the service lister watches Services for the containers' service
// environment variables.
type ServiceInterface interface {
	List(ctx context.Context, opts metav1.ListOptions) (*v1.ServiceList, error)
	Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
}

// ServiceAccountInterface: the runtime requests service account tokens for projected volumes.
type ServiceAccountInterface interface {
	CreateToken(ctx context.Context, serviceAccountName string, tokenRequest *authnv1.TokenRequest, opts metav1.CreateOptions) (*authnv1.TokenRequest, error)
}

// ConfigMapInterface: the object manager reads (or watches, one by name) the ConfigMaps
// pods use in env and volumes.
type ConfigMapInterface interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (*v1.ConfigMap, error)
	List(ctx context.Context, opts metav1.ListOptions) (*v1.ConfigMapList, error)
	Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
}

// SecretInterface: the object manager reads (or watches, one by name) the Secrets pods use
// in env, volumes and image pulls.
type SecretInterface interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (*v1.Secret, error)
	List(ctx context.Context, opts metav1.ListOptions) (*v1.SecretList, error)
	Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
}

// PodInterface: the API source lists and watches pods, the status syncer patches and deletes
// them, the mirror client creates and deletes mirror pods.
type PodInterface interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (*v1.Pod, error)
	List(ctx context.Context, opts metav1.ListOptions) (*v1.PodList, error)
	Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
	Create(ctx context.Context, pod *v1.Pod, opts metav1.CreateOptions) (*v1.Pod, error)
	Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error
	Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresources ...string) (*v1.Pod, error)
}

// NodeInterface: registration creates and reads the Node; status updates patch it.
type NodeInterface interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (*v1.Node, error)
	Create(ctx context.Context, node *v1.Node, opts metav1.CreateOptions) (*v1.Node, error)
	Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresources ...string) (*v1.Node, error)
}

// EventInterface is what the event sink writes with.
type EventInterface interface {
	Create(ctx context.Context, event *v1.Event, opts metav1.CreateOptions) (*v1.Event, error)
	Update(ctx context.Context, event *v1.Event, opts metav1.UpdateOptions) (*v1.Event, error)
	Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresources ...string) (*v1.Event, error)
}

// CoordinationV1Interface holds the node Lease.
type CoordinationV1Interface interface {
	Leases(namespace string) LeaseInterface
}

// LeaseInterface is what the heartbeat needs to keep the node Lease fresh.
type LeaseInterface interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (*coordinationv1.Lease, error)
	Create(ctx context.Context, lease *coordinationv1.Lease, opts metav1.CreateOptions) (*coordinationv1.Lease, error)
	Update(ctx context.Context, lease *coordinationv1.Lease, opts metav1.UpdateOptions) (*coordinationv1.Lease, error)
}

// AuthenticationV1Interface checks bearer tokens for the kubelet API.
type AuthenticationV1Interface interface {
	TokenReviews() TokenReviewInterface
}

// TokenReviewInterface creates TokenReviews.
type TokenReviewInterface interface {
	Create(ctx context.Context, review *authnv1.TokenReview, opts metav1.CreateOptions) (*authnv1.TokenReview, error)
}

// AuthorizationV1Interface authorizes kubelet API requests.
type AuthorizationV1Interface interface {
	SubjectAccessReviews() SubjectAccessReviewInterface
}

// SubjectAccessReviewInterface creates SubjectAccessReviews.
type SubjectAccessReviewInterface interface {
	Create(ctx context.Context, review *authzv1.SubjectAccessReview, opts metav1.CreateOptions) (*authzv1.SubjectAccessReview, error)
}
