/*
 * pam_countersign: asks a user's trusted device to approve an SSH or sudo
 * login. The module only speaks the PAM conversation; the protocol work
 * (the broker, TLS, the user's configuration) happens in a helper process
 * it starts, `device-agent pam-helper`, so that no Swift runtime, HTTP or
 * TLS code is loaded into sshd or sudo (docs/pam.md says why).
 *
 * The helper writes lines on its standard output, each at most LINE_MAX_
 * bytes:
 *   info TEXT     shown to the user (PAM_TEXT_INFO)
 *   error TEXT    shown as an error (PAM_ERROR_MSG)
 *   prompt TEXT   asked (PAM_PROMPT_ECHO_ON); the module writes back
 *                 "answer TEXT" or, if the conversation failed (the client
 *                 went away, Ctrl-C), "cancel"
 *   allow ID      the request ID was approved
 *   ignore WHY    this module has no say (a user who is not enrolled, when
 *                 configured so)
 *   deny WHY      refused
 *   refuse WHY    refused on the user's device, and no other try should
 *                 follow in this conversation: PAM_MAXTRIES, on which sshd
 *                 turns keyboard-interactive off for the connection
 * Only "allow" followed by the helper's exit status 0 lets the user in;
 * anything else (a crash, a timeout, a malformed line, a signal) is a
 * refusal. The module never retries and starts one helper per attempt.
 *
 * Arguments in the PAM service file:
 *   helper=PATH   the device-agent binary (default /usr/local/bin/device-agent)
 *   config=PATH   the helper's configuration (default /etc/countersign/pam.conf)
 *   timeout=SECS  the longest the helper may stay silent while no question
 *                 is open (default 330)
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#define PAM_SM_AUTH
#include <security/pam_ext.h>
#include <security/pam_modules.h>

#define LINE_MAX_ 2048
/* Built with -fvisibility=hidden: only PAM's entry points are exported. */
#define EXPORTED __attribute__((visibility("default")))

struct helper {
    pid_t pid;
    int fd;                 /* our end of the socket pair */
    char buffer[LINE_MAX_ * 2];
    size_t used;
};

static const char *argument(int argc, const char **argv, const char *name, const char *fallback) {
    size_t length = strlen(name);
    for (int i = 0; i < argc; i++) {
        if (strncmp(argv[i], name, length) == 0 && argv[i][length] == '=') return argv[i] + length + 1;
    }
    return fallback;
}

/* Whether the program that loaded us is sudo (or sudoedit), by the file it
 * runs: its argv[0] is whatever its caller chose. */
static int loaded_by_sudo(void) {
    char path[4096];
    ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 1);
    if (n <= 0) return 0;
    path[n] = '\0';
    const char *name = strrchr(path, '/');
    name = name ? name + 1 : path;
    return strcmp(name, "sudo") == 0 || strcmp(name, "sudoedit") == 0;
}

/* The user name as the log may show it: it comes from the client (sshd
 * passes on what it was offered), so control bytes become '?'. */
static void printable(const char *in, char *out, size_t size) {
    size_t i = 0;
    for (; in[i] != '\0' && i + 1 < size; i++) {
        unsigned char c = (unsigned char)in[i];
        out[i] = (c < 0x20 || c == 0x7f) ? '?' : (char)c;
    }
    out[i] = '\0';
}

/* What sudo was asked to run, when sudo loaded us (empty otherwise): "sudo"
 * and its arguments, joined by spaces, non-printable bytes as '?'. Its own
 * argv[0] is left out: the caller chose it. At most COMMAND_SHOWN bytes:
 * a longer one keeps its start and its end and says how much is left out
 * between them, so that padding cannot push what runs out of sight. */
#define COMMAND_SHOWN 800
static void own_command_line(char *out, size_t size) {
    out[0] = '\0';
    if (!loaded_by_sudo() || size < COMMAND_SHOWN + 1) return;
    int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    size_t capacity = 1 << 20, n = 0;
    char *all = malloc(capacity);
    if (all == NULL) {
        close(fd);
        return;
    }
    for (;;) {
        ssize_t got = read(fd, all + n, capacity - n);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) break;
        n += (size_t)got;
        if (n == capacity) break;
    }
    close(fd);
    char *args = memchr(all, '\0', n);
    size_t length = args ? n - (size_t)(args + 1 - all) : 0;
    char *text = args ? args + 1 : all;
    for (size_t i = 0; i < length; i++) {
        unsigned char c = (unsigned char)text[i];
        if (c == '\0') text[i] = ' ';
        else if (c < 0x20 || c == 0x7f) text[i] = '?';
    }
    while (length > 0 && text[length - 1] == ' ') length--;
    size_t room = COMMAND_SHOWN - 5; /* "sudo " */
    if (length <= room) {
        snprintf(out, size, "sudo %.*s", (int)length, text);
    } else {
        char gap[64];
        size_t keep = (room - sizeof(gap)) / 2;
        snprintf(gap, sizeof(gap), " [... %zu characters not shown ...] ", length - 2 * keep);
        snprintf(out, size, "sudo %.*s%s%.*s", (int)keep, text, gap, (int)keep, text + length - keep);
    }
    free(all);
}

static int start_helper(struct helper *h, const char *path, const char *config, const char *user,
                        const char *service, const char *rhost, const char *tty, const char *command) {
    int pair[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0) return -1;
    pid_t pid = fork();
    if (pid < 0) {
        close(pair[0]);
        close(pair[1]);
        return -1;
    }
    if (pid == 0) {
        /* The child: the socket is its standard input and output; nothing
         * else of the parent's is inherited. */
        if (dup2(pair[1], 0) < 0 || dup2(pair[1], 1) < 0) _exit(127);
        int null = open("/dev/null", O_WRONLY);
        if (null >= 0) dup2(null, 2);
        closefrom(3);
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        signal(SIGPIPE, SIG_DFL);
        signal(SIGCHLD, SIG_DFL);
        char *const args[] = {(char *)path, "pam-helper", "--config", (char *)config, "--user", (char *)user,
                              "--service", (char *)service, "--rhost", (char *)rhost, "--tty", (char *)tty,
                              "--command", (char *)command, NULL};
        char *const env[] = {"PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C.UTF-8", NULL};
        execve(path, args, env);
        _exit(127);
    }
    close(pair[1]);
    h->pid = pid;
    h->fd = pair[0];
    h->used = 0;
    return 0;
}

/* The next line from the helper, without its newline; 0 on success, -1 on
 * end of output, an error, a line too long, or `timeout` seconds of silence. */
static int next_line(struct helper *h, char *line, size_t size, int timeout) {
    time_t deadline = time(NULL) + timeout;
    for (;;) {
        char *newline = memchr(h->buffer, '\n', h->used);
        if (newline != NULL) {
            size_t length = (size_t)(newline - h->buffer);
            if (length >= size) return -1;
            memcpy(line, h->buffer, length);
            line[length] = '\0';
            h->used -= length + 1;
            memmove(h->buffer, newline + 1, h->used);
            return 0;
        }
        if (h->used >= sizeof(h->buffer)) return -1;
        time_t left = deadline - time(NULL);
        if (left <= 0) return -1;
        struct pollfd waiting = {.fd = h->fd, .events = POLLIN};
        int ready = poll(&waiting, 1, (int)(left > 60 ? 60000 : left * 1000));
        if (ready < 0 && errno == EINTR) continue;
        if (ready <= 0) continue;
        ssize_t n = recv(h->fd, h->buffer + h->used, sizeof(h->buffer) - h->used, 0);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return -1;
        h->used += (size_t)n;
    }
}

static int send_line(struct helper *h, const char *verb, const char *text) {
    char line[LINE_MAX_];
    int length = snprintf(line, sizeof(line), "%s%s%s\n", verb, text ? " " : "", text ? text : "");
    if (length < 0 || (size_t)length >= sizeof(line)) return -1;
    /* MSG_NOSIGNAL: a helper that died must not take sshd with it. */
    return send(h->fd, line, (size_t)length, MSG_NOSIGNAL) == length ? 0 : -1;
}

/* Ends the helper: closing the socket tells it to stop (it withdraws a
 * request still waiting); a helper that does not exit soon is killed. */
static int finish_helper(struct helper *h) {
    if (h->fd >= 0) {
        close(h->fd);
        h->fd = -1;
    }
    int status = 0;
    for (int i = 0; i < 50; i++) {
        pid_t done = waitpid(h->pid, &status, WNOHANG);
        if (done == h->pid) return status;
        if (done < 0 && errno != EINTR) return -1;
        struct timespec pause = {0, 100 * 1000 * 1000};
        nanosleep(&pause, NULL);
    }
    kill(h->pid, SIGKILL);
    while (waitpid(h->pid, &status, 0) < 0 && errno == EINTR) {}
    return -1;
}

static int converse(pam_handle_t *pamh, int style, const char *text, char **answer) {
    const struct pam_conv *conv = NULL;
    if (pam_get_item(pamh, PAM_CONV, (const void **)&conv) != PAM_SUCCESS || conv == NULL || conv->conv == NULL)
        return PAM_CONV_ERR;
    struct pam_message message = {.msg_style = style, .msg = text};
    const struct pam_message *messages[1] = {&message};
    struct pam_response *responses = NULL;
    int result = conv->conv(1, messages, &responses, conv->appdata_ptr);
    if (result != PAM_SUCCESS) {
        if (responses != NULL) {
            free(responses[0].resp);
            free(responses);
        }
        return result;
    }
    if (answer != NULL) {
        *answer = responses != NULL ? responses[0].resp : NULL;
        if (*answer == NULL) return PAM_CONV_ERR;
    } else if (responses != NULL) {
        free(responses[0].resp);
    }
    free(responses);
    return PAM_SUCCESS;
}

EXPORTED PAM_EXTERN int pam_sm_authenticate(pam_handle_t *pamh, int flags, int argc, const char **argv) {
    (void)flags;
    const char *helper_path = argument(argc, argv, "helper", "/usr/local/bin/device-agent");
    const char *config = argument(argc, argv, "config", "/etc/countersign/pam.conf");
    int timeout = atoi(argument(argc, argv, "timeout", "330"));
    if (timeout <= 0) timeout = 330;

    const char *user = NULL, *service = NULL, *rhost = NULL, *tty = NULL;
    if (pam_get_user(pamh, &user, NULL) != PAM_SUCCESS || user == NULL || user[0] == '\0') return PAM_USER_UNKNOWN;
    pam_get_item(pamh, PAM_SERVICE, (const void **)&service);
    pam_get_item(pamh, PAM_RHOST, (const void **)&rhost);
    pam_get_item(pamh, PAM_TTY, (const void **)&tty);
    char command[LINE_MAX_];
    own_command_line(command, sizeof(command));
    char shown_user[256];
    printable(user, shown_user, sizeof(shown_user));

    struct helper h = {.pid = -1, .fd = -1};
    if (start_helper(&h, helper_path, config, user, service ? service : "", rhost ? rhost : "", tty ? tty : "",
                     command) != 0) {
        pam_syslog(pamh, LOG_ERR, "could not start %s: %m; denied", helper_path);
        return PAM_AUTH_ERR;
    }
    int verdict = PAM_AUTH_ERR;
    char line[LINE_MAX_];
    for (;;) {
        if (next_line(&h, line, sizeof(line), timeout) != 0) {
            pam_syslog(pamh, LOG_ERR, "the helper ended without a verdict for %s; denied", shown_user);
            break;
        }
        if (strncmp(line, "info ", 5) == 0) {
            converse(pamh, PAM_TEXT_INFO, line + 5, NULL);
        } else if (strncmp(line, "error ", 6) == 0) {
            converse(pamh, PAM_ERROR_MSG, line + 6, NULL);
        } else if (strncmp(line, "prompt ", 7) == 0) {
            char *answer = NULL;
            int result = converse(pamh, PAM_PROMPT_ECHO_ON, line + 7, &answer);
            if (result != PAM_SUCCESS) {
                send_line(&h, "cancel", NULL);
            } else {
                /* One line, no control characters: the helper reads lines. */
                for (char *c = answer; *c; c++) {
                    if ((unsigned char)*c < 0x20 || *c == 0x7f) *c = ' ';
                }
                if (strlen(answer) > 256) answer[256] = '\0';
                send_line(&h, "answer", answer);
            }
            if (answer != NULL) {
                explicit_bzero(answer, strlen(answer));
                free(answer);
            }
        } else if (strncmp(line, "allow ", 6) == 0) {
            pam_syslog(pamh, LOG_INFO, "%s allowed: request %.64s", shown_user, line + 6);
            verdict = PAM_SUCCESS;
            break;
        } else if (strncmp(line, "ignore ", 7) == 0 || strcmp(line, "ignore") == 0) {
            verdict = PAM_IGNORE;
            break;
        } else if (strncmp(line, "refuse ", 7) == 0) {
            pam_syslog(pamh, LOG_NOTICE, "%s refused on the device: no further try in this conversation", shown_user);
            verdict = PAM_MAXTRIES;
            break;
        } else {
            /* "deny", or anything the module does not know. */
            break;
        }
    }
    int status = finish_helper(&h);
    if (verdict != PAM_AUTH_ERR && verdict != PAM_MAXTRIES
        && !(status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
        pam_syslog(pamh, LOG_ERR, "the helper did not exit cleanly after its verdict for %s; denied", shown_user);
        verdict = PAM_AUTH_ERR;
    }
    return verdict;
}

EXPORTED PAM_EXTERN int pam_sm_setcred(pam_handle_t *pamh, int flags, int argc, const char **argv) {
    (void)pamh;
    (void)flags;
    (void)argc;
    (void)argv;
    return PAM_SUCCESS;
}
