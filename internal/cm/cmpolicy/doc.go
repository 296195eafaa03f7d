// Package cmpolicy holds the resource managers' policy names and parses their options as the
// configuration spells them (cpuManagerPolicy, cpuManagerPolicyOptions,
// topologyManagerPolicyOptions). The configuration checks them at start and the managers act
// on them; keeping them here lets config check them without importing the managers.
package cmpolicy
