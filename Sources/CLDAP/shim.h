// Debian's OpenLDAP client library (libldap-dev at build time, libldap-2.5-0
// at run time): the directory sync reads users from LDAP (OpenLDAP, Active
// Directory, FreeIPA) through the small helpers below.
//
// Why helpers at all: Swift cannot call ldap_set_option's `void *` interface
// comfortably, cannot see macros that are casts (LDAP_SCOPE_*,
// LDAP_SASL_SIMPLE, LDAP_OPT_ON), the order of the TLS options matters, and
// libldap 2.5 needs a work-around to time out TLS handshakes. A system
// library target cannot carry a .c file, so everything here is `static
// inline`. Every helper returns an LDAP result code (LDAP_SUCCESS is 0;
// negative codes such as LDAP_SERVER_DOWN are client-side errors) unless its
// comment says otherwise; cldap_err2string turns one into text and
// cldap_diagnostic_message gives the server's (or the shim's) detail.
//
// A sync: cldap_global_init once; then per run cldap_open, cldap_set_tls,
// cldap_set_timeouts, cldap_connect, cldap_start_tls (ldap:// only),
// cldap_simple_bind, cldap_search_page until the cookie is NULL (walking
// entries with cldap_first_entry/cldap_next_entry, cldap_get_dn,
// cldap_get_values), cldap_unbind.
//
// Threads: one LDAP * handle must be used by one thread at a time; separate
// handles may be used on separate threads. Call cldap_global_init() once,
// early, before two threads may open handles.
//
// Signals: over TLS, closing a connection the server has already dropped
// writes to a dead socket, and libldap does not suppress SIGPIPE: the
// process must ignore SIGPIPE (signal(SIGPIPE, SIG_IGN)) or it is killed.
// (SwiftNIO does that on Linux once it opens a socket; don't rely on it.)
//
// Memory: strings returned as `char *` are freed with cldap_memfree; value
// arrays with cldap_values_free; search results with cldap_msgfree; paging
// cookies with cldap_cookie_free; the handle with cldap_unbind.
#ifndef COUNTERSIGN_CLDAP_SHIM_H
#define COUNTERSIGN_CLDAP_SHIM_H

#include <ldap.h>
#include <lber.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <stdio.h>
#include <sys/time.h>
#include <unistd.h>

// Search scopes (ldap.h's LDAP_SCOPE_* are casts, which Swift does not import).
#define CLDAP_SCOPE_BASE 0
#define CLDAP_SCOPE_ONELEVEL 1
#define CLDAP_SCOPE_SUBTREE 2

// Peer certificate checking for cldap_set_tls (same values as
// LDAP_OPT_X_TLS_*). DEMAND and HARD both verify the chain and the host name
// in the URI against the certificate; NEVER checks nothing (tests only).
#define CLDAP_TLS_NEVER 0
#define CLDAP_TLS_HARD 1
#define CLDAP_TLS_DEMAND 2
#define CLDAP_TLS_ALLOW 3
#define CLDAP_TLS_TRY 4

// Forces libldap's one-time global initialisation (reading ldap.conf and the
// environment), which the manual asks for on one thread before others start,
// and its TLS layer's (GnuTLS), whose first use is not locked in 2.5. Call
// once at start-up. A failure to build the global TLS context (a bad
// TLS_CACERT in ldap.conf) is ignored: handles get their own context.
static inline int cldap_global_init(void) {
    int version = 0, is_server = 0;
    int rc = ldap_get_option(NULL, LDAP_OPT_PROTOCOL_VERSION, &version);
    if (rc != LDAP_OPT_SUCCESS) return LDAP_LOCAL_ERROR;
    (void)ldap_set_option(NULL, LDAP_OPT_X_TLS_NEWCTX, &is_server);
    return LDAP_SUCCESS;
}

// True when every URI in the list (space or comma separated, as
// ldap_initialize accepts for fail-over) is ldap:// or ldaps://.
static inline int cldap__uris_acceptable(const char *uris) {
    const char *p = uris;
    int seen = 0;
    while (*p) {
        while (*p == ' ' || *p == ',' || *p == '\t') p++;
        if (!*p) break;
        if (strncasecmp(p, "ldap://", 7) != 0 && strncasecmp(p, "ldaps://", 8) != 0) return 0;
        seen = 1;
        while (*p && *p != ' ' && *p != ',' && *p != '\t') p++;
    }
    return seen;
}

// Creates a handle for `uri` (nothing is sent yet: the connection is opened
// by cldap_connect or the first operation). Sets LDAPv3, turns off
// referral chasing (libldap would re-bind anonymously to whatever server a
// referral names: Active Directory hands out referrals for the domain's DNS
// partitions) and restarts system calls interrupted by signals.
static inline int cldap_open(const char *uri, LDAP **out) {
    LDAP *ld = NULL;
    int rc, version = LDAP_VERSION3;
    if (out == NULL) return LDAP_PARAM_ERROR;
    *out = NULL;
    if (uri == NULL || !cldap__uris_acceptable(uri)) return LDAP_PARAM_ERROR;
    rc = ldap_initialize(&ld, uri);
    if (rc != LDAP_SUCCESS) return rc;
    if (ldap_set_option(ld, LDAP_OPT_PROTOCOL_VERSION, &version) != LDAP_OPT_SUCCESS ||
        ldap_set_option(ld, LDAP_OPT_REFERRALS, LDAP_OPT_OFF) != LDAP_OPT_SUCCESS ||
        ldap_set_option(ld, LDAP_OPT_RESTART, LDAP_OPT_ON) != LDAP_OPT_SUCCESS) {
        ldap_unbind_ext_s(ld, NULL, NULL);
        return LDAP_LOCAL_ERROR;
    }
    *out = ld;
    return LDAP_SUCCESS;
}

// Debian's bundle of the system's trusted CAs (package ca-certificates).
#define CLDAP_SYSTEM_CA_FILE "/etc/ssl/certs/ca-certificates.crt"

// A new handle does not copy the global CA settings (ldap.conf's TLS_CACERT,
// TLS_CACERTDIR): it only uses them through the global TLS context, which
// LDAP_OPT_X_TLS_NEWCTX replaces. So copy them, and when there are none
// (no ldap.conf: libldap-common is only recommended) use the system bundle.
static inline int cldap__default_ca(LDAP *ld) {
    char *file = NULL, *dir = NULL;
    int rc = LDAP_OPT_SUCCESS;
    ldap_get_option(NULL, LDAP_OPT_X_TLS_CACERTFILE, &file);
    ldap_get_option(NULL, LDAP_OPT_X_TLS_CACERTDIR, &dir);
    if (file != NULL && file[0] != '\0') rc = ldap_set_option(ld, LDAP_OPT_X_TLS_CACERTFILE, file);
    if (rc == LDAP_OPT_SUCCESS && dir != NULL && dir[0] != '\0')
        rc = ldap_set_option(ld, LDAP_OPT_X_TLS_CACERTDIR, dir);
    if (rc == LDAP_OPT_SUCCESS && (file == NULL || file[0] == '\0') && (dir == NULL || dir[0] == '\0') &&
        access(CLDAP_SYSTEM_CA_FILE, R_OK) == 0)
        rc = ldap_set_option(ld, LDAP_OPT_X_TLS_CACERTFILE, CLDAP_SYSTEM_CA_FILE);
    if (file != NULL) ldap_memfree(file);
    if (dir != NULL) ldap_memfree(dir);
    return rc;
}

// Per-handle TLS settings, used by ldaps:// and by StartTLS. `ca_file` is a
// PEM file of trusted CAs; NULL or "" means the system's trusted CAs
// (ldap.conf's TLS_CACERT/TLS_CACERTDIR if set, else CLDAP_SYSTEM_CA_FILE).
// Requires TLS 1.2 or later. Must be called before the first operation on
// the handle. It ends by asking for a new TLS context
// (LDAP_OPT_X_TLS_NEWCTX): without that, per-handle CA and checking options
// are silently ignored in favour of the global context.
// A CA file that cannot be read or parsed fails here, with LDAP_LOCAL_ERROR.
// Host name checking (DEMAND/HARD) uses the host in the URI; libldap checks
// "localhost" against the machine's own host name instead.
static inline int cldap_set_tls(LDAP *ld, const char *ca_file, int require_cert) {
    int is_server = 0, min_protocol = LDAP_OPT_X_TLS_PROTOCOL_TLS1_2;
    if (ld == NULL || require_cert < CLDAP_TLS_NEVER || require_cert > CLDAP_TLS_TRY)
        return LDAP_PARAM_ERROR;
    if (ca_file != NULL && ca_file[0] != '\0') {
        if (ldap_set_option(ld, LDAP_OPT_X_TLS_CACERTFILE, ca_file) != LDAP_OPT_SUCCESS) return LDAP_PARAM_ERROR;
    } else if (cldap__default_ca(ld) != LDAP_OPT_SUCCESS) {
        return LDAP_PARAM_ERROR;
    }
    if (ldap_set_option(ld, LDAP_OPT_X_TLS_REQUIRE_CERT, &require_cert) != LDAP_OPT_SUCCESS ||
        ldap_set_option(ld, LDAP_OPT_X_TLS_PROTOCOL_MIN, &min_protocol) != LDAP_OPT_SUCCESS)
        return LDAP_PARAM_ERROR;
    if (ldap_set_option(ld, LDAP_OPT_X_TLS_NEWCTX, &is_server) != LDAP_OPT_SUCCESS) {
        char *msg = NULL;
        ldap_get_option(ld, LDAP_OPT_DIAGNOSTIC_MESSAGE, &msg);
        if (msg == NULL || msg[0] == '\0')
            ldap_set_option(ld, LDAP_OPT_DIAGNOSTIC_MESSAGE,
                            "cannot create the TLS context (is the CA file readable PEM?)");
        if (msg != NULL) ldap_memfree(msg);
        return LDAP_LOCAL_ERROR;
    }
    return LDAP_SUCCESS;
}

// The run-time libldap's version as MMmmpp (2.5.13 is 20513), or 0.
static inline int cldap_library_version(void) {
    LDAPAPIInfo info;
    memset(&info, 0, sizeof info);
    info.ldapai_info_version = LDAP_API_INFO_VERSION;
    if (ldap_get_option(NULL, LDAP_OPT_API_INFO, &info) != LDAP_OPT_SUCCESS) return 0;
    if (info.ldapai_vendor_name != NULL) ldap_memfree(info.ldapai_vendor_name);
    if (info.ldapai_extensions != NULL) ldap_memvfree((void **)info.ldapai_extensions);
    return info.ldapai_vendor_version;
}

// libldap before 2.6.9 (all of 2.5, so Debian 12's 2.5.13) never times out a
// TLS handshake the server stalls (ldaps://, or after StartTLS): with a
// network timeout set it spins at 100% CPU forever, without one it blocks
// forever (OpenLDAP ITS#8047, fixed in 2.6.9). Its only bounded handshake
// loop is the one for asynchronous connects, so once the TCP connection is
// up (this callback runs after connect(2) and before the handshake) the
// handle is switched to that mode and the socket made non-blocking: the
// handshake then waits at most the network timeout. The TCP connect itself
// stays synchronous, so fail-over to a host's other addresses and to the
// other URIs in the list still works. Installed by cldap_set_timeouts.
static inline int cldap__bound_tls_handshake(LDAP *ld, Sockbuf *sb, LDAPURLDesc *srv,
                                             struct sockaddr *addr, struct ldap_conncb *ctx) {
    (void)srv;
    (void)addr;
    (void)ctx;
    ber_sockbuf_ctrl(sb, LBER_SB_OPT_SET_NONBLOCK, (void *)1);
    ldap_set_option(ld, LDAP_OPT_CONNECT_ASYNC, LDAP_OPT_ON);
    return 0;
}

static inline void cldap__bound_tls_handshake_del(LDAP *ld, Sockbuf *sb, struct ldap_conncb *ctx) {
    (void)ld;
    (void)sb;
    (void)ctx;
}

static const struct ldap_conncb cldap__bound_tls_handshake_cb = {
    cldap__bound_tls_handshake, cldap__bound_tls_handshake_del, NULL};

// Timeouts in milliseconds; a value <= 0 leaves that one as it is (libldap's
// default is to wait forever): always set both. `network_ms` bounds
// connect(2) and the TLS handshake (see cldap__bound_tls_handshake);
// `operation_ms` bounds each synchronous call's wait for its result (bind,
// StartTLS, each search page) and is also sent to the server as the search
// time limit (rounded up to seconds). Call before the first operation.
static inline int cldap_set_timeouts(LDAP *ld, int network_ms, int operation_ms) {
    int rc;
    struct timeval tv;
    if (ld == NULL) return LDAP_PARAM_ERROR;
    if (network_ms > 0) {
        tv.tv_sec = network_ms / 1000;
        tv.tv_usec = (network_ms % 1000) * 1000;
        rc = ldap_set_option(ld, LDAP_OPT_NETWORK_TIMEOUT, &tv);
        if (rc != LDAP_OPT_SUCCESS) return LDAP_PARAM_ERROR;
        if (cldap_library_version() < 20609) {
            rc = ldap_set_option(ld, LDAP_OPT_CONNECT_CB, &cldap__bound_tls_handshake_cb);
            if (rc != LDAP_OPT_SUCCESS) return LDAP_LOCAL_ERROR;
        }
    }
    if (operation_ms > 0) {
        int seconds = (operation_ms + 999) / 1000;
        tv.tv_sec = operation_ms / 1000;
        tv.tv_usec = (operation_ms % 1000) * 1000;
        rc = ldap_set_option(ld, LDAP_OPT_TIMEOUT, &tv);
        if (rc != LDAP_OPT_SUCCESS) return LDAP_PARAM_ERROR;
        rc = ldap_set_option(ld, LDAP_OPT_TIMELIMIT, &seconds);
        if (rc != LDAP_OPT_SUCCESS) return LDAP_PARAM_ERROR;
    }
    return LDAP_SUCCESS;
}

// libldap 2.5 reports a failed TLS handshake as "(unknown error code)" (the
// reason is only in its debug log). Replaces that with a message that says
// what probably happened, keeping libldap's text at the end.
static inline void cldap__explain_tls_failure(LDAP *ld) {
    char *msg = NULL, text[512];
    ldap_get_option(ld, LDAP_OPT_DIAGNOSTIC_MESSAGE, &msg);
    if (msg == NULL || msg[0] == '\0') {
        if (msg != NULL) ldap_memfree(msg);
        return;
    }
    snprintf(text, sizeof text,
             "TLS handshake failed: the server certificate was not accepted (unknown CA, host name "
             "mismatch, expired) or the server did not complete TLS [libldap: %s]", msg);
    ldap_memfree(msg);
    ldap_set_option(ld, LDAP_OPT_DIAGNOSTIC_MESSAGE, text);
}

// The handle's current result code (set by the last failed call).
static inline int cldap__result_code(LDAP *ld, int fallback) {
    int rc = fallback;
    if (ldap_get_option(ld, LDAP_OPT_RESULT_CODE, &rc) != LDAP_OPT_SUCCESS || rc == LDAP_SUCCESS) return fallback;
    return rc;
}

// Opens the connection now (TCP, plus the TLS handshake for ldaps://), so
// that connection and certificate problems show up here rather than in the
// bind. Optional: the first operation connects anyway. (ldap_connect is in
// ldap.h but has no manual page.)
static inline int cldap_connect(LDAP *ld) {
    char *uri = NULL;
    int rc, tls;
    if (ld == NULL) return LDAP_PARAM_ERROR;
    rc = ldap_connect(ld);
    if (rc == LDAP_SUCCESS) return LDAP_SUCCESS;
    rc = cldap__result_code(ld, LDAP_SERVER_DOWN);
    ldap_get_option(ld, LDAP_OPT_URI, &uri);
    tls = uri != NULL && strstr(uri, "ldaps://") != NULL;
    if (uri != NULL) ldap_memfree(uri);
    if (tls) cldap__explain_tls_failure(ld);
    return rc;
}

// StartTLS on an ldap:// handle (call cldap_set_tls first). Do not call it on
// an ldaps:// handle. On failure the handle must be discarded.
static inline int cldap_start_tls(LDAP *ld) {
    int rc;
    if (ld == NULL) return LDAP_PARAM_ERROR;
    rc = ldap_start_tls_s(ld, NULL, NULL);
    if (rc == LDAP_CONNECT_ERROR) cldap__explain_tls_failure(ld);
    return rc;
}

// Simple bind. A DN with an empty password would be an "unauthenticated
// bind" (RFC 4513 5.1.2), which some servers answer with success without
// checking anything: it is refused here with LDAP_PARAM_ERROR. An empty DN
// and empty password is an anonymous bind.
static inline int cldap_simple_bind(LDAP *ld, const char *dn, const char *password) {
    struct berval cred;
    if (ld == NULL) return LDAP_PARAM_ERROR;
    if (dn == NULL) dn = "";
    if (password == NULL) password = "";
    if (dn[0] != '\0' && password[0] == '\0') {
        ldap_set_option(ld, LDAP_OPT_DIAGNOSTIC_MESSAGE,
                        "refusing an unauthenticated bind: the password is empty");
        return LDAP_PARAM_ERROR;
    }
    cred.bv_val = (char *)password;
    cred.bv_len = (ber_len_t)strlen(password);
    return ldap_sasl_bind_s(ld, dn, LDAP_SASL_SIMPLE, &cred, NULL, NULL, NULL);
}

// Splits "uid mail memberOf" or "uid,mail,memberOf" into a NULL-terminated
// array in one allocation (free it with free). NULL or "" gives *out = NULL,
// which asks for all user attributes.
static inline int cldap__split_attrs(const char *list, char ***out) {
    size_t len, count = 0, i;
    const char *p;
    char **vec, *copy;
    int in_word = 0;
    *out = NULL;
    if (list == NULL || list[0] == '\0') return LDAP_SUCCESS;
    len = strlen(list);
    for (p = list; *p; p++) {
        int sep = (*p == ' ' || *p == ',' || *p == '\t');
        if (!sep && !in_word) count++;
        in_word = !sep;
    }
    if (count == 0) return LDAP_SUCCESS;
    vec = (char **)malloc((count + 1) * sizeof(char *) + len + 1);
    if (vec == NULL) return LDAP_NO_MEMORY;
    copy = (char *)(vec + count + 1);
    memcpy(copy, list, len + 1);
    i = 0;
    in_word = 0;
    for (char *q = copy; *q; q++) {
        int sep = (*q == ' ' || *q == ',' || *q == '\t');
        if (sep) {
            *q = '\0';
        } else if (!in_word) {
            vec[i++] = q;
        }
        in_word = !sep;
    }
    vec[i] = NULL;
    *out = vec;
    return LDAP_SUCCESS;
}

// The paged results control with size 0, which RFC 2696 uses to end a paged
// search early (ldap_create_page_control refuses a size below 1).
static inline int cldap__abandon_page_control(struct berval *cookie, LDAPControl **out) {
    BerElement *ber = ber_alloc_t(LBER_USE_DER);
    struct berval value = {0, NULL};
    int rc;
    *out = NULL;
    if (ber == NULL) return LDAP_NO_MEMORY;
    if (ber_printf(ber, "{iO}", (ber_int_t)0, cookie) == -1 || ber_flatten2(ber, &value, 1) == -1) {
        ber_free(ber, 1);
        return LDAP_ENCODING_ERROR;
    }
    ber_free(ber, 1);
    rc = ldap_control_create(LDAP_CONTROL_PAGEDRESULTS, 0, &value, 1, out);
    ber_memfree(value.bv_val);
    return rc;
}

// One page of a search with the Simple Paged Results control (RFC 2696,
// 1.2.840.113556.1.4.319; Active Directory returns at most 1000 entries per
// request without it). `attrs` is a space/comma separated list (operational
// attributes such as memberOf, nsAccountLock or pwdAccountLockedTime must be
// named; NULL or "" means all user attributes). `*cookie` must be NULL for
// the first page; afterwards it is non-NULL exactly when the call succeeded
// and more pages remain, so loop while it is non-NULL. On return *res holds
// this page's messages (possibly NULL after a transport error); free it with
// cldap_msgfree whatever the result code. The control is not critical: a
// server without paging answers with everything at once.
// To give up part way, call once more with page_size 0 and the cookie: the
// server then releases its paging state and no entries come back.
static inline int cldap_search_page(LDAP *ld, const char *base, int scope, const char *filter,
                                    const char *attrs, int page_size,
                                    struct berval **cookie, LDAPMessage **res) {
    char **attrv = NULL;
    LDAPControl *page = NULL, *sctrls[2] = {NULL, NULL}, **rctrls = NULL;
    struct berval *next = NULL;
    int rc, err = 0;
    if (res != NULL) *res = NULL;
    if (ld == NULL || base == NULL || cookie == NULL || res == NULL || page_size < 0 ||
        scope < CLDAP_SCOPE_BASE || scope > CLDAP_SCOPE_SUBTREE)
        return LDAP_PARAM_ERROR;
    if (filter == NULL || filter[0] == '\0') filter = "(objectClass=*)";
    if (page_size == 0) {
        if (*cookie == NULL) return LDAP_PARAM_ERROR;
        rc = cldap__abandon_page_control(*cookie, &page);
    } else {
        rc = ldap_create_page_control(ld, (ber_int_t)page_size, *cookie, 0, &page);
    }
    if (rc != LDAP_SUCCESS) return rc;
    rc = cldap__split_attrs(attrs, &attrv);
    if (rc != LDAP_SUCCESS) {
        ldap_control_free(page);
        return rc;
    }
    sctrls[0] = page;
    rc = ldap_search_ext_s(ld, base, scope, filter, attrv, 0, sctrls, NULL, NULL, 0, res);
    ldap_control_free(page);
    free(attrv);
    // A page whose result cannot be read, or whose result says anything
    // but success, fails the search: taken as the last page, it would
    // leave out everyone after it.
    if (rc == LDAP_SUCCESS && *res != NULL) {
        int parsed = ldap_parse_result(ld, *res, &err, NULL, NULL, NULL, &rctrls, 0);
        if (parsed != LDAP_SUCCESS) rc = parsed;
        else if (err != LDAP_SUCCESS) rc = err;
    }
    if (rc == LDAP_SUCCESS && rctrls != NULL) {
        LDAPControl *ctrl = ldap_control_find(LDAP_CONTROL_PAGEDRESULTS, rctrls, NULL);
        if (ctrl != NULL) {
            ber_int_t estimate = 0;
            struct berval value = {0, NULL};
            if (ldap_parse_pageresponse_control(ld, ctrl, &estimate, &value) == LDAP_SUCCESS &&
                value.bv_val != NULL && value.bv_len > 0) {
                next = (struct berval *)ber_memalloc(sizeof(struct berval));
                if (next != NULL) {
                    *next = value;
                } else {
                    ber_memfree(value.bv_val);
                    rc = LDAP_NO_MEMORY;
                }
            } else if (value.bv_val != NULL) {
                ber_memfree(value.bv_val);
            }
        }
        ldap_controls_free(rctrls);
        rctrls = NULL;
    }
    if (rctrls != NULL) ldap_controls_free(rctrls);
    if (*cookie != NULL) ber_bvfree(*cookie);
    *cookie = (rc == LDAP_SUCCESS) ? next : NULL;
    if (rc != LDAP_SUCCESS && next != NULL) ber_bvfree(next);
    return rc;
}

static inline void cldap_cookie_free(struct berval *cookie) {
    if (cookie != NULL) ber_bvfree(cookie);
}

// Entries of a search result (search references are skipped).
static inline int cldap_count_entries(LDAP *ld, LDAPMessage *res) {
    return (ld == NULL || res == NULL) ? 0 : ldap_count_entries(ld, res);
}

static inline LDAPMessage *cldap_first_entry(LDAP *ld, LDAPMessage *res) {
    return (ld == NULL || res == NULL) ? NULL : ldap_first_entry(ld, res);
}

static inline LDAPMessage *cldap_next_entry(LDAP *ld, LDAPMessage *entry) {
    return (ld == NULL || entry == NULL) ? NULL : ldap_next_entry(ld, entry);
}

// The entry's DN as a C string (free with cldap_memfree), or NULL.
static inline char *cldap_get_dn(LDAP *ld, LDAPMessage *entry) {
    return (ld == NULL || entry == NULL) ? NULL : ldap_get_dn(ld, entry);
}

// The values of one attribute, a NULL-terminated array of binary-safe
// bervals (bv_val is not NUL-terminated), or NULL when the entry has none.
// Active Directory returns very large multi-valued attributes in ranges
// ("member;range=0-1499"): those do not come back under the plain name.
static inline struct berval **cldap_get_values(LDAP *ld, LDAPMessage *entry, const char *attr) {
    return (ld == NULL || entry == NULL || attr == NULL) ? NULL : ldap_get_values_len(ld, entry, attr);
}

static inline int cldap_count_values(struct berval **values) {
    return values == NULL ? 0 : ldap_count_values_len(values);
}

static inline void cldap_values_free(struct berval **values) {
    if (values != NULL) ldap_value_free_len(values);
}

static inline void cldap_msgfree(LDAPMessage *res) {
    if (res != NULL) ldap_msgfree(res);
}

static inline void cldap_memfree(void *p) {
    if (p != NULL) ldap_memfree(p);
}

// A static English string for a result code; never NULL, never freed.
static inline const char *cldap_err2string(int rc) {
    return ldap_err2string(rc);
}

// The last diagnostic text on the handle (the server's message, or the TLS
// layer's reason for a failed handshake), or NULL. Free with cldap_memfree.
static inline char *cldap_diagnostic_message(LDAP *ld) {
    char *msg = NULL;
    if (ld == NULL) return NULL;
    if (ldap_get_option(ld, LDAP_OPT_DIAGNOSTIC_MESSAGE, &msg) != LDAP_OPT_SUCCESS) return NULL;
    if (msg != NULL && msg[0] == '\0') {
        ldap_memfree(msg);
        return NULL;
    }
    return msg;
}

// The negotiated TLS version ("TLS1.3") and cipher of an established
// session, or NULL without TLS. Free with cldap_memfree.
static inline char *cldap_tls_version(LDAP *ld) {
    char *s = NULL;
    if (ld == NULL || ldap_get_option(ld, LDAP_OPT_X_TLS_VERSION, &s) != LDAP_OPT_SUCCESS) return NULL;
    return s;
}

static inline char *cldap_tls_cipher(LDAP *ld) {
    char *s = NULL;
    if (ld == NULL || ldap_get_option(ld, LDAP_OPT_X_TLS_CIPHER, &s) != LDAP_OPT_SUCCESS) return NULL;
    return s;
}

// Sends an unbind (if connected), closes the connection and frees the
// handle, which must not be used again. Over TLS, when the server has gone
// away, this is where SIGPIPE is raised (see the top of this file).
static inline int cldap_unbind(LDAP *ld) {
    if (ld == NULL) return LDAP_SUCCESS;
    return ldap_unbind_ext_s(ld, NULL, NULL);
}

#endif
