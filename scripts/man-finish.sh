#!/usr/bin/env bash
# Finishes a man page that swift-argument-parser's generate-manual wrote
# (mdoc, read on standard input, written on standard output): the header
# and footer name Countersign and its version (not "BSD General Commands
# Manual"), the help's `code` spans are set in bold instead of showing
# their backticks, blank lines are paragraph breaks (.Pp, which groff
# wants), and FILES and EXIT STATUS sections come before AUTHORS.
#
#   scripts/man-finish.sh COMMAND VERSION <generated.1 >finished.1
set -euo pipefail
if [ $# -ne 2 ]; then
    sed -n '2,9s/^# \{0,1\}//p' "$0" >&2
    exit 2
fi
command=$1
version=$2

files_and_status() {
    case "$command" in
    device-broker)
        cat <<'MDOC'
.Sh FILES
.Bl -tag -width Ds
.It Pa /etc/countersign/broker.conf
The packaged service's settings: a name = value line for each option of serve. Given no
.Fl -data-dir ,
.Fl -database
or
.Fl -config ,
the commands other than serve open the store it names.
.It Pa /var/lib/countersign
The packaged service's data directory, with its SQLite database countersign.sqlite.
.It Pa ./countersign-data
The data directory of a broker started without
.Fl -data-dir .
.It Pa /etc/countersign/totp.key
The key the devices' TOTP secrets are sealed under
.Pq Fl -totp-key-file .
.It Pa /lib/systemd/system/countersign-broker.service
The systemd unit.
.It Pa /usr/share/doc/countersign-broker/operations.md.gz
Running the broker in production.
.El
.Sh EXIT STATUS
0 on success; 1 on an error, said on standard error; 64 for a command line that cannot work (an unknown command or option, a value out of range).
MDOC
        ;;
    device-agent)
        cat <<'MDOC'
.Sh FILES
.Bl -tag -width Ds
.It Pa ~/.config/countersign
This machine's device keys (mode 0600), each with the broker, app and user it belongs to;
.Fl -config-dir
or COUNTERSIGN_AGENT_DIR names another directory.
.It Pa /etc/countersign/pam.conf
The configuration of pam-helper, which the PAM module runs
.Pq mode 0600, root's .
.It Pa /lib/x86_64-linux-gnu/security/pam_countersign.so
The PAM module.
.It Pa /usr/lib/systemd/user/countersign-watch.service
The user service that raises a desktop notification for each request.
.It Pa /usr/share/doc/countersign-agent/pam.md.gz
SSH and sudo logins approved on a trusted device.
.El
.Sh EXIT STATUS
0 on success; 1 on an error, said on standard error; 64 for a command line that cannot work. login also exits 3 when the request was rejected, 4 when nobody decided in time, 5 when a code was refused and 6 while the user's "this wasn't me" holds; approve exits 5 when no request arrived in time and 6 when the request it names is not pending; 130 and 143 after Ctrl-C and SIGTERM, which withdraw a pending request. Each command's help lists its own.
MDOC
        ;;
    esac
}

awk -v os="Countersign $version" -v files="$(files_and_status)" '
    # generate-manual says only "exits 0 on success, and >0 if an error occurs".
    /^\.Sh "?EXIT STATUS"?$/ { skip = 1; next }
    skip && /^\.Ex / { skip = 0; next }
    /^\.Dt / { print ".ds doc-volume-operating-system Countersign" }
    /^\.Os$/ { print ".Os " os; next }
    /^\.Sh AUTHORS/ && files != "" { print files }
    /^[[:space:]]*$/ { print ".Pp"; next }
    { print }
' | sed -E 's/`([^`]*)`/\\fB\1\\fR/g'
