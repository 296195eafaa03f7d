package kubeclient

import (
	"context"
	"fmt"
	"net/http"

	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	resourcev1beta1 "k8s.io/api/resource/v1beta1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/gentype"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
)

// clientset is the production Interface: one REST client per group version, sharing one HTTP
// transport and one rate limiter as a client-go clientset does, and the generic typed clients
// client-go's generated clients are built on.
type clientset struct {
	core         coreV1
	coordination coordinationV1
	authn        authenticationV1
	authz        authorizationV1
	node         nodeV1
	certificates certificatesV1
	storage      storageV1
	resource     resourceV1beta1
}

// NewInterface builds an Interface on cfg as it is (no rate limits or user agent added).
func NewInterface(cfg *rest.Config) (Interface, error) { return newForConfig(cfg) }

// newForConfig builds an Interface from c the way kubernetes.NewForConfig builds a clientset:
// default user agent, a transport shared by all groups, and one token bucket for QPS/Burst
// (none when QPS <= 0).
func newForConfig(c *rest.Config) (Interface, error) {
	cfg := *c
	if cfg.UserAgent == "" {
		cfg.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	httpClient, err := rest.HTTPClientFor(&cfg)
	if err != nil {
		return nil, err
	}
	if cfg.RateLimiter == nil && cfg.QPS > 0 {
		if cfg.Burst <= 0 {
			return nil, fmt.Errorf("burst is required to be greater than 0 when RateLimiter is not set and QPS is set to greater than 0")
		}
		cfg.RateLimiter = flowcontrol.NewTokenBucketRateLimiter(cfg.QPS, cfg.Burst)
	}
	var cs clientset
	for _, g := range []struct {
		gv      schema.GroupVersion
		apiPath string
		out     *rest.Interface
	}{
		{v1.SchemeGroupVersion, "/api", &cs.core.client},
		{coordinationv1.SchemeGroupVersion, "/apis", &cs.coordination.client},
		{authnv1.SchemeGroupVersion, "/apis", &cs.authn.client},
		{authzv1.SchemeGroupVersion, "/apis", &cs.authz.client},
		{nodev1.SchemeGroupVersion, "/apis", &cs.node.client},
		{certificatesv1.SchemeGroupVersion, "/apis", &cs.certificates.client},
		{storagev1.SchemeGroupVersion, "/apis", &cs.storage.client},
		{resourcev1beta1.SchemeGroupVersion, "/apis", &cs.resource.client},
	} {
		if *g.out, err = restClientFor(cfg, g.gv, g.apiPath, httpClient); err != nil {
			return nil, err
		}
	}
	return &cs, nil
}

// restClientFor is a generated group client's setConfigDefaults plus RESTClientFor.
func restClientFor(cfg rest.Config, gv schema.GroupVersion, apiPath string, h *http.Client) (rest.Interface, error) {
	cfg.GroupVersion = &gv
	cfg.APIPath = apiPath
	cfg.NegotiatedSerializer = rest.CodecFactoryForGeneratedClient(Scheme, codecs).WithoutConversion()
	return rest.RESTClientForConfigAndClient(&cfg, h)
}

func (c *clientset) CoreV1() CoreV1Interface                     { return c.core }
func (c *clientset) CoordinationV1() CoordinationV1Interface     { return c.coordination }
func (c *clientset) AuthenticationV1() AuthenticationV1Interface { return c.authn }
func (c *clientset) AuthorizationV1() AuthorizationV1Interface   { return c.authz }
func (c *clientset) NodeV1() NodeV1Interface                     { return c.node }
func (c *clientset) CertificatesV1() CertificatesV1Interface     { return c.certificates }
func (c *clientset) StorageV1() StorageV1Interface               { return c.storage }
func (c *clientset) ResourceV1beta1() ResourceV1beta1Interface   { return c.resource }

// All resources below prefer protobuf, as their generated clients do: without an explicit
// content type on the config, requests send protobuf and accept protobuf or JSON.

type coreV1 struct{ client rest.Interface }

func (c coreV1) Pods(namespace string) PodInterface {
	return gentype.NewClientWithList[*v1.Pod, *v1.PodList]("pods", c.client, parameterCodec, namespace,
		func() *v1.Pod { return &v1.Pod{} }, func() *v1.PodList { return &v1.PodList{} },
		gentype.PrefersProtobuf[*v1.Pod]())
}

func (c coreV1) Services(namespace string) ServiceInterface {
	return gentype.NewClientWithList[*v1.Service, *v1.ServiceList]("services", c.client, parameterCodec, namespace,
		func() *v1.Service { return &v1.Service{} }, func() *v1.ServiceList { return &v1.ServiceList{} },
		gentype.PrefersProtobuf[*v1.Service]())
}

func (c coreV1) Nodes() NodeInterface {
	return gentype.NewClient[*v1.Node]("nodes", c.client, parameterCodec, "",
		func() *v1.Node { return &v1.Node{} }, gentype.PrefersProtobuf[*v1.Node]())
}

func (c coreV1) Events(namespace string) EventInterface {
	return gentype.NewClient[*v1.Event]("events", c.client, parameterCodec, namespace,
		func() *v1.Event { return &v1.Event{} }, gentype.PrefersProtobuf[*v1.Event]())
}

func (c coreV1) ConfigMaps(namespace string) ConfigMapInterface {
	return gentype.NewClientWithList[*v1.ConfigMap, *v1.ConfigMapList]("configmaps", c.client, parameterCodec, namespace,
		func() *v1.ConfigMap { return &v1.ConfigMap{} }, func() *v1.ConfigMapList { return &v1.ConfigMapList{} },
		gentype.PrefersProtobuf[*v1.ConfigMap]())
}

func (c coreV1) Secrets(namespace string) SecretInterface {
	return gentype.NewClientWithList[*v1.Secret, *v1.SecretList]("secrets", c.client, parameterCodec, namespace,
		func() *v1.Secret { return &v1.Secret{} }, func() *v1.SecretList { return &v1.SecretList{} },
		gentype.PrefersProtobuf[*v1.Secret]())
}

func (c coreV1) PersistentVolumeClaims(namespace string) PersistentVolumeClaimInterface {
	return gentype.NewClient[*v1.PersistentVolumeClaim]("persistentvolumeclaims", c.client, parameterCodec, namespace,
		func() *v1.PersistentVolumeClaim { return &v1.PersistentVolumeClaim{} }, gentype.PrefersProtobuf[*v1.PersistentVolumeClaim]())
}

func (c coreV1) PersistentVolumes() PersistentVolumeInterface {
	return gentype.NewClient[*v1.PersistentVolume]("persistentvolumes", c.client, parameterCodec, "",
		func() *v1.PersistentVolume { return &v1.PersistentVolume{} }, gentype.PrefersProtobuf[*v1.PersistentVolume]())
}

func (c coreV1) ServiceAccounts(namespace string) ServiceAccountInterface {
	return serviceAccounts{client: c.client, namespace: namespace}
}

// serviceAccounts posts to the token subresource, which the generic typed client lacks.
type serviceAccounts struct {
	client    rest.Interface
	namespace string
}

func (s serviceAccounts) CreateToken(ctx context.Context, name string, tr *authnv1.TokenRequest, opts metav1.CreateOptions) (*authnv1.TokenRequest, error) {
	result := &authnv1.TokenRequest{}
	err := s.client.Post().Namespace(s.namespace).Resource("serviceaccounts").Name(name).SubResource("token").
		VersionedParams(&opts, parameterCodec).Body(tr).Do(ctx).Into(result)
	return result, err
}

type coordinationV1 struct{ client rest.Interface }

func (c coordinationV1) Leases(namespace string) LeaseInterface {
	return gentype.NewClient[*coordinationv1.Lease]("leases", c.client, parameterCodec, namespace,
		func() *coordinationv1.Lease { return &coordinationv1.Lease{} },
		gentype.PrefersProtobuf[*coordinationv1.Lease]())
}

type authenticationV1 struct{ client rest.Interface }

func (c authenticationV1) TokenReviews() TokenReviewInterface {
	return gentype.NewClient[*authnv1.TokenReview]("tokenreviews", c.client, parameterCodec, "",
		func() *authnv1.TokenReview { return &authnv1.TokenReview{} },
		gentype.PrefersProtobuf[*authnv1.TokenReview]())
}

type authorizationV1 struct{ client rest.Interface }

func (c authorizationV1) SubjectAccessReviews() SubjectAccessReviewInterface {
	return gentype.NewClient[*authzv1.SubjectAccessReview]("subjectaccessreviews", c.client, parameterCodec, "",
		func() *authzv1.SubjectAccessReview { return &authzv1.SubjectAccessReview{} },
		gentype.PrefersProtobuf[*authzv1.SubjectAccessReview]())
}

type nodeV1 struct{ client rest.Interface }

func (c nodeV1) RuntimeClasses() RuntimeClassInterface {
	return gentype.NewClientWithList[*nodev1.RuntimeClass, *nodev1.RuntimeClassList]("runtimeclasses", c.client, parameterCodec, "",
		func() *nodev1.RuntimeClass { return &nodev1.RuntimeClass{} }, func() *nodev1.RuntimeClassList { return &nodev1.RuntimeClassList{} },
		gentype.PrefersProtobuf[*nodev1.RuntimeClass]())
}

type certificatesV1 struct{ client rest.Interface }

func (c certificatesV1) CertificateSigningRequests() CertificateSigningRequestInterface {
	return gentype.NewClient[*certificatesv1.CertificateSigningRequest]("certificatesigningrequests", c.client, parameterCodec, "",
		func() *certificatesv1.CertificateSigningRequest { return &certificatesv1.CertificateSigningRequest{} },
		gentype.PrefersProtobuf[*certificatesv1.CertificateSigningRequest]())
}

type storageV1 struct{ client rest.Interface }

func (c storageV1) CSINodes() CSINodeInterface {
	return gentype.NewClient[*storagev1.CSINode]("csinodes", c.client, parameterCodec, "",
		func() *storagev1.CSINode { return &storagev1.CSINode{} }, gentype.PrefersProtobuf[*storagev1.CSINode]())
}

func (c storageV1) CSIDrivers() CSIDriverInterface {
	return gentype.NewClient[*storagev1.CSIDriver]("csidrivers", c.client, parameterCodec, "",
		func() *storagev1.CSIDriver { return &storagev1.CSIDriver{} }, gentype.PrefersProtobuf[*storagev1.CSIDriver]())
}

func (c storageV1) VolumeAttachments() VolumeAttachmentInterface {
	return gentype.NewClient[*storagev1.VolumeAttachment]("volumeattachments", c.client, parameterCodec, "",
		func() *storagev1.VolumeAttachment { return &storagev1.VolumeAttachment{} },
		gentype.PrefersProtobuf[*storagev1.VolumeAttachment]())
}

type resourceV1beta1 struct{ client rest.Interface }

func (c resourceV1beta1) ResourceClaims(namespace string) ResourceClaimInterface {
	return gentype.NewClient[*resourcev1beta1.ResourceClaim]("resourceclaims", c.client, parameterCodec, namespace,
		func() *resourcev1beta1.ResourceClaim { return &resourcev1beta1.ResourceClaim{} },
		gentype.PrefersProtobuf[*resourcev1beta1.ResourceClaim]())
}

func (c resourceV1beta1) ResourceSlices() ResourceSliceInterface {
	return gentype.NewClientWithList[*resourcev1beta1.ResourceSlice, *resourcev1beta1.ResourceSliceList]("resourceslices",
		c.client, parameterCodec, "",
		func() *resourcev1beta1.ResourceSlice { return &resourcev1beta1.ResourceSlice{} },
		func() *resourcev1beta1.ResourceSliceList { return &resourcev1beta1.ResourceSliceList{} },
		gentype.PrefersProtobuf[*resourcev1beta1.ResourceSlice]())
}
