package app

import (
	"github.com/nodelet/nodelet/internal/server/healthz"
	"github.com/nodelet/nodelet/internal/server/watchdog"
)

// startWatchdog feeds systemd's watchdog when the unit sets WatchdogSec (and the
// SystemdWatchdog gate is on, as by default), with the checks of /healthz.
func (n *agent) startWatchdog(checks map[string]healthz.Check) error {
	if !n.cfg.SystemdWatchdog {
		return nil
	}
	wd, err := watchdog.New(checks)
	if err != nil || wd == nil {
		return err
	}
	n.comps.start("systemd watchdog", wd.Run)
	return nil
}
