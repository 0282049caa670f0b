--
-- PostgreSQL database dump
--

\restrict zVgmw97zeJQuxU84hJwaOqQ5V039bnD6wkHaIYBIZgVhdPrNfnETmIMSdzHxmDO

-- Dumped from database version 15.18 (Debian 15.18-0+deb12u1)
-- Dumped by pg_dump version 15.18 (Debian 15.18-0+deb12u1)

SET statement_timeout = 0;
SET lock_timeout = 0;
SET idle_in_transaction_session_timeout = 0;
SET client_encoding = 'UTF8';
SET standard_conforming_strings = on;
SELECT pg_catalog.set_config('search_path', '', false);
SET check_function_bodies = false;
SET xmloption = content;
SET client_min_messages = warning;
SET row_security = off;

SET default_tablespace = '';

SET default_table_access_method = heap;

--
-- Name: api_key_changes; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.api_key_changes (
    id bigint NOT NULL,
    api_key_id text NOT NULL,
    action text NOT NULL,
    via text NOT NULL,
    ip text,
    at double precision NOT NULL,
    CONSTRAINT api_key_changes_action_check CHECK ((action = ANY (ARRAY['created'::text, 'rotated'::text, 'revoked'::text])))
);


--
-- Name: api_key_changes_id_seq; Type: SEQUENCE; Schema: public; Owner: -
--

CREATE SEQUENCE public.api_key_changes_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;


--
-- Name: api_key_changes_id_seq; Type: SEQUENCE OWNED BY; Schema: public; Owner: -
--

ALTER SEQUENCE public.api_key_changes_id_seq OWNED BY public.api_key_changes.id;


--
-- Name: api_key_redirect_urls; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.api_key_redirect_urls (
    api_key_id text NOT NULL,
    "position" integer NOT NULL,
    url text NOT NULL
);


--
-- Name: api_keys; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.api_keys (
    id text NOT NULL,
    name text NOT NULL,
    secret_digest bytea NOT NULL,
    created_at double precision NOT NULL,
    previous_secret_digest bytea,
    previous_secret_expires_at double precision,
    revoked_at double precision
);


--
-- Name: ciba_clients; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.ciba_clients (
    api_key_id text NOT NULL,
    notification_endpoint text NOT NULL,
    updated_at double precision NOT NULL
);


--
-- Name: ciba_requests; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.ciba_requests (
    event_id text NOT NULL,
    api_key_id text NOT NULL,
    scope text NOT NULL,
    poll_interval integer NOT NULL,
    next_poll_at double precision NOT NULL,
    notification_token text,
    auth_req_id text,
    redeemed_at double precision,
    created_at double precision NOT NULL,
    notification_endpoint text
);


--
-- Name: code_failures; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.code_failures (
    issuer text NOT NULL,
    client_user_id text NOT NULL,
    consecutive integer NOT NULL,
    locked_until double precision,
    last_attempt_at double precision
);


--
-- Name: countersign_migrations; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.countersign_migrations (
    id text NOT NULL,
    applied_at timestamp with time zone DEFAULT now() NOT NULL
);


--
-- Name: decision_records; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.decision_records (
    event_id text NOT NULL,
    issuer text NOT NULL,
    client_user_id text NOT NULL,
    decided_at double precision NOT NULL,
    document bytea NOT NULL
);


--
-- Name: device_changes; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.device_changes (
    id bigint NOT NULL,
    issuer text NOT NULL,
    client_user_id text NOT NULL,
    device_id text NOT NULL,
    device_name text NOT NULL,
    action text NOT NULL,
    actor text NOT NULL,
    ip text NOT NULL,
    at double precision NOT NULL,
    CONSTRAINT device_changes_action_check CHECK ((action = ANY (ARRAY['enrolled'::text, 'revoked'::text])))
);


--
-- Name: device_changes_id_seq; Type: SEQUENCE; Schema: public; Owner: -
--

ALTER TABLE public.device_changes ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.device_changes_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);


--
-- Name: devices; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.devices (
    id text NOT NULL,
    issuer text NOT NULL,
    client_user_id text NOT NULL,
    public_key text NOT NULL,
    name text NOT NULL,
    type text NOT NULL,
    created_at double precision NOT NULL,
    last_seen_at double precision,
    revoked_at double precision,
    totp_secret bytea,
    totp_last_step bigint,
    push_endpoint text,
    push_p256dh bytea,
    push_auth bytea,
    push_vapid_key text,
    push_updated_at double precision
);


--
-- Name: enrollment_tokens; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.enrollment_tokens (
    digest bytea NOT NULL,
    issuer text NOT NULL,
    client_user_id text NOT NULL,
    created_at double precision NOT NULL,
    expires_at double precision NOT NULL,
    used_at double precision
);


--
-- Name: events; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.events (
    id text NOT NULL,
    created_at double precision NOT NULL,
    updated_at double precision NOT NULL,
    issuer text NOT NULL,
    client_user_id text NOT NULL,
    name text NOT NULL,
    ip text NOT NULL,
    location text NOT NULL,
    method text NOT NULL,
    status text NOT NULL,
    expires_at double precision NOT NULL,
    details text,
    requester_name text,
    nonce text NOT NULL,
    match_number text,
    wrong_matches integer DEFAULT 0 NOT NULL,
    requester_token_digest bytea,
    decided_by text,
    decided_at double precision,
    decision text,
    new_device text,
    code_attempts integer DEFAULT 0 NOT NULL,
    requested_by text DEFAULT 'backend'::text NOT NULL,
    withdrawn_at double precision,
    expiry_announced boolean DEFAULT false NOT NULL,
    status_reason text,
    CONSTRAINT events_requested_by_check CHECK ((requested_by = ANY (ARRAY['backend'::text, 'requester'::text]))),
    CONSTRAINT events_status_check CHECK ((status = ANY (ARRAY['pending'::text, 'approved'::text, 'rejected'::text])))
);


--
-- Name: outbox; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.outbox (
    id text NOT NULL,
    kind text NOT NULL,
    target text NOT NULL,
    event_id text,
    payload bytea NOT NULL,
    created_at double precision NOT NULL,
    deliver_until double precision NOT NULL,
    next_attempt_at double precision NOT NULL,
    attempts integer DEFAULT 0 NOT NULL,
    state text NOT NULL,
    last_error text,
    finished_at double precision,
    claim text,
    lease_until double precision,
    CONSTRAINT outbox_state_check CHECK ((state = ANY (ARRAY['queued'::text, 'delivered'::text, 'failed'::text, 'cancelled'::text])))
);


--
-- Name: proof_ids; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.proof_ids (
    device_id text NOT NULL,
    jti text NOT NULL,
    expires_at double precision NOT NULL
);


--
-- Name: recovery_codes; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.recovery_codes (
    digest bytea NOT NULL,
    issuer text NOT NULL,
    client_user_id text NOT NULL,
    created_at double precision NOT NULL,
    used_at double precision
);


--
-- Name: refresh_tokens; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.refresh_tokens (
    digest bytea NOT NULL,
    family_id text NOT NULL,
    api_key_id text NOT NULL,
    identity_id text NOT NULL,
    created_at double precision NOT NULL,
    expires_at double precision NOT NULL,
    rotated_at double precision,
    revoked_at double precision,
    auth_time double precision,
    client_user_id text,
    acr text
);


--
-- Name: request_counts; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.request_counts (
    scope text NOT NULL,
    key text NOT NULL,
    minute bigint NOT NULL,
    count bigint NOT NULL
);


--
-- Name: signing_keys; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.signing_keys (
    id text NOT NULL,
    private_key_pem text NOT NULL,
    created_at double precision NOT NULL
);


--
-- Name: user_protections; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.user_protections (
    issuer text NOT NULL,
    client_user_id text NOT NULL,
    until double precision NOT NULL
);


--
-- Name: vapid_keys; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.vapid_keys (
    id text NOT NULL,
    private_key_pem text NOT NULL,
    created_at double precision NOT NULL
);


--
-- Name: verification_challenges; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.verification_challenges (
    id bigint NOT NULL,
    api_key_id text NOT NULL,
    identifier_type text NOT NULL,
    identifier text NOT NULL,
    code_digest bytea NOT NULL,
    code_expires_at double precision NOT NULL,
    code_challenge text NOT NULL,
    redirect_url text NOT NULL,
    state text,
    created_at double precision NOT NULL,
    failed_attempts integer DEFAULT 0 NOT NULL,
    sends integer DEFAULT 1 NOT NULL,
    verified_at double precision,
    authorization_code_digest bytea,
    authorization_code_expires_at double precision,
    redeemed_at double precision,
    user_agent text NOT NULL,
    ip text NOT NULL,
    nonce text
);


--
-- Name: verified_identities; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.verified_identities (
    id text NOT NULL,
    user_id text NOT NULL,
    api_key_id text NOT NULL,
    identifier_type text NOT NULL,
    identifier text NOT NULL,
    created_at double precision NOT NULL,
    updated_at double precision NOT NULL
);


--
-- Name: webhook_endpoints; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.webhook_endpoints (
    id text NOT NULL,
    api_key_id text NOT NULL,
    url text NOT NULL,
    types text NOT NULL,
    secret text NOT NULL,
    previous_secret text,
    previous_until double precision,
    created_at double precision NOT NULL,
    failing_since double precision,
    disabled_at double precision,
    disabled_reason text
);


--
-- Name: api_key_changes id; Type: DEFAULT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.api_key_changes ALTER COLUMN id SET DEFAULT nextval('public.api_key_changes_id_seq'::regclass);


--
-- Data for Name: api_key_changes; Type: TABLE DATA; Schema: public; Owner: -
--

COPY public.api_key_changes (id, api_key_id, action, via, ip, at) FROM stdin;
1	ck_pqOcrZHCVLtg-z74	created	cli	\N	1795679493.4887328
\.


--
-- Data for Name: api_key_redirect_urls; Type: TABLE DATA; Schema: public; Owner: -
--

COPY public.api_key_redirect_urls (api_key_id, "position", url) FROM stdin;
\.


--
-- Data for Name: api_keys; Type: TABLE DATA; Schema: public; Owner: -
--

COPY public.api_keys (id, name, secret_digest, created_at, previous_secret_digest, previous_secret_expires_at, revoked_at) FROM stdin;
ck_pqOcrZHCVLtg-z74	fixture	\\x4596f58121b33121d6d2e93be9eb4ce263664b333c95ed996310e76aaed24d8a	1795679493.4887328	\N	\N	\N
\.


--
-- Data for Name: ciba_clients; Type: TABLE DATA; Schema: public; Owner: -
--

COPY public.ciba_clients (api_key_id, notification_endpoint, updated_at) FROM stdin;
\.


--
-- Data for Name: ciba_requests; Type: TABLE DATA; Schema: public; Owner: -
--

COPY public.ciba_requests (event_id, api_key_id, scope, poll_interval, next_poll_at, notification_token, auth_req_id, redeemed_at, created_at, notification_endpoint) FROM stdin;
\.


--
-- Data for Name: code_failures; Type: TABLE DATA; Schema: public; Owner: -
--

COPY public.code_failures (issuer, client_user_id, consecutive, locked_until, last_attempt_at) FROM stdin;
\.


--
-- Data for Name: countersign_migrations; Type: TABLE DATA; Schema: public; Owner: -
--

COPY public.countersign_migrations (id, applied_at) FROM stdin;
v1	2026-11-26 07:51:33.524099+00
v8-pending-by-requester	2026-11-26 07:51:33.524099+00
v9-api-key-rotation	2026-11-26 07:51:33.524099+00
v10-code-failures-kept	2026-11-26 07:51:33.524099+00
v11-event-withdrawal	2026-11-26 07:51:33.524099+00
v12-push-outbox	2026-11-26 07:51:33.524099+00
v13-webhooks	2026-11-26 07:51:33.524099+00
v14-fraud-reports	2026-11-26 07:51:33.524099+00
v15-ciba	2026-11-26 07:51:33.524099+00
v16-ciba-ping	2026-11-26 07:51:33.524099+00
v17-request-counts	2026-11-26 07:51:33.524099+00
v18-rejected-events	2026-11-26 07:51:33.524099+00
\.


--
-- Data for Name: decision_records; Type: TABLE DATA; Schema: public; Owner: -
--

COPY public.decision_records (event_id, issuer, client_user_id, decided_at, document) FROM stdin;
ev_kzhrmcRdnEeQ1xvB-S-PeQ	ck_pqOcrZHCVLtg-z74	alice	1795679495.4820213	\\x7b22437265617465644174223a22323032362d31312d32365430373a35313a33352e3330345a222c224944223a2265765f6b7a68726d6352646e456551317876422d532d506551222c22557064617465644174223a22323032362d31312d32365430373a35313a33352e3438325a222c22617070726f766564223a747275652c22636c69656e745f757365725f6964223a22616c696365222c22646563696465645f6174223a22323032362d31312d32365430373a35313a33352e3438325a222c22646563696465645f6279223a226a6f5849566d425950537a5039746c31564141543734536e747a57416c6475655f3862744a75534f6d6a6b222c226465636973696f6e223a2265794a72615751694f694a716231684a566d314357564254656c413564477778566b46425644633055323530656c6442624752315a563834596e524b64564e50625770724969776964486c77496a6f6959323931626e526c636e4e705a3234745a47566a61584e7062323472616e6430496977695957786e496a6f6952564d794e54596966512e65794a7a6147393362694936496b52325956644f623263304f55464554544e76574770584e474a6e6231523065465a614d55784e56487075566e5a33544842454d335a54626c6b694c434a70595851694f6a45334f5455324e7a6b304f545573496d563264434936496d56325832743661484a7459314a6b626b566c55544634646b4974557931515a5645694c434a68645751694f694a6f644852774f6c7776584338784d6a63754d4334774c6a45364e444d794d546b694c434a6b5a574e7063326c7662694936496d467763484a76646d55694c434a745958526a61434936496a673349697769626d3975593255694f694935616b746663326732563270524d45786c6556686f537931765448465249697769616e5270496a6f69545552785155497855324e73615552424e57354d595868694f57356655534a392e4a6c7945537a65676b47726f2d6b30754d41442d7454614954596b773652594b5f784833564a65494f777a566538465032324c645953416a766455504175566470686c5941444f685f6d75707042386278596a6a4551222c226576656e74223a224c4f47494e222c22657870697265735f6174223a22323032362d31312d32365430373a35323a33352e3330345a222c226970223a223139322e302e322e3130222c22697373756572223a22636b5f70714f63725a4843564c74672d7a3734222c226c6f636174696f6e223a224c796f6e222c226d6574686f64223a22545255535445445f444556494345222c226e6577223a66616c73652c227265717565737465725f6e616d65223a226275696c642d686f7374222c22737461747573223a22617070726f766564222c2274696d657374616d70223a2231373935363739343935227d
ev_YnGMzm8LK8e59SdEqeyuLw	ck_pqOcrZHCVLtg-z74	alice	1795679495.6952245	\\x7b22437265617465644174223a22323032362d31312d32365430373a35313a33352e3533365a222c224944223a2265765f596e474d7a6d384c4b38653539536445716579754c77222c22557064617465644174223a22323032362d31312d32365430373a35313a33352e3639355a222c22617070726f766564223a66616c73652c22636c69656e745f757365725f6964223a22616c696365222c22646563696465645f6174223a22323032362d31312d32365430373a35313a33352e3639355a222c22646563696465645f6279223a2235524b734f7854596e505a7669626b484538715334427034526c4c33476a4b78656c67534b417859337638222c226465636973696f6e223a2265794a72615751694f694931556b747a5433685557573551576e5a70596d744952546878557a5243634452536245777a5232704c654756735a314e4c5158685a4d335934496977695957786e496a6f6952564d794e5459694c434a30655841694f694a6a623356756447567963326c6e6269316b5a574e7063326c76626974716433516966512e65794a756232356a5a534936496c68686357347954325a4757554a52545670504d6a684a59576c4e644863694c434a70595851694f6a45334f5455324e7a6b304f545573496d703061534936496e4a4b4e575a68593074546455353254544234536d4a74533370664d3145694c434a7a6147393362694936496a524f533146564e5670784e335644544331775a544178566e67776379313455555246596d3433646b5a3153554a5a516d393157553561643273694c434a745958526a61434936496a6730496977695958566b496a6f6961485230634470634c3177764d5449334c6a41754d4334784f6a517a4d6a4535496977695a47566a61584e70623234694f694a795a57706c593351694c434a6c646e51694f694a6c646c395a626b644e656d3034544573345a545535553252466357563564557833496e302e49544c2d71374f737144424f473746626254556544654a397264566a6c61397458713144546846343439423748566b74745a374b6a35682d6a65784a4c457557313043746f5f6677656f4552497a4a7173455f775441222c2264657461696c73223a22506179203132302e30302045555220746f2041434d45222c226576656e74223a225452414e53414354494f4e222c22657870697265735f6174223a22323032362d31312d32365430373a35323a33352e3533365a222c226970223a223132372e302e302e31222c22697373756572223a22636b5f70714f63725a4843564c74672d7a3734222c226c6f636174696f6e223a22556e6b6e6f776e222c226d6574686f64223a22545255535445445f444556494345222c226e6577223a66616c73652c22737461747573223a2272656a6563746564222c2274696d657374616d70223a2231373935363739343935227d
ev_eZTDZiTeZaDGvBM_eyKW6w	ck_pqOcrZHCVLtg-z74	bob	1795679495.9043603	\\x7b22437265617465644174223a22323032362d31312d32365430373a35313a33352e3734315a222c224944223a2265765f655a54445a6954655a61444776424d5f65794b573677222c22557064617465644174223a22323032362d31312d32365430373a35313a33352e3930345a222c22617070726f766564223a747275652c22636c69656e745f757365725f6964223a22626f62222c22646563696465645f6174223a22323032362d31312d32365430373a35313a33352e3930345a222c22646563696465645f6279223a2235697a544139496b6b73587075523646467a592d62465479317056356b6f4564415a45744c6f766f756445222c226465636973696f6e223a2265794a30655841694f694a6a623356756447567963326c6e6269316b5a574e7063326c7662697471643351694c434a68624763694f694a46557a49314e694973496d74705a434936496a5670656c52424f556c7261334e59634856534e6b5a47656c6b74596b5a5565544677566a56726230566b5156704664457876646d39315a45556966512e65794a745958526a61434936496a597749697769616e5270496a6f6953576c435432703651544676566d706c65444e42546b464b64454a435a794973496e4e6f62336475496a6f69645868325a334e4c53306c3354473152636d35756346707a61454933547a67744e3256745a306469636b3177654668664d6b6c585930307964794973496d6c68644349364d5463354e5459334f5451354e5377695958566b496a6f6961485230634470634c3177764d5449334c6a41754d4334784f6a517a4d6a4535496977695a47566a61584e70623234694f694a686348427962335a6c49697769626d3975593255694f694a4653577832633070774f446c4b656d4a6f64314e5464475a524e573133496977695a585a30496a6f695a585a665a567055524670705647566159555248646b4a4e583256355331633264794a392e33557547634e7561734c3233334e377867354353395a38336d3450756269793067434835463554666e56463870557971534e363549455478615f314261726846676d395231557638397a37306e475972416c65374351222c226576656e74223a224c4f47494e222c22657870697265735f6174223a22323032362d31312d32365430373a35323a33352e3734315a222c226970223a223132372e302e302e31222c22697373756572223a22636b5f70714f63725a4843564c74672d7a3734222c226c6f636174696f6e223a22556e6b6e6f776e222c226d6574686f64223a22545255535445445f444556494345222c226e6577223a66616c73652c227265717565737465725f6e616d65223a2263692d72756e6e6572222c22737461747573223a22617070726f766564222c2274696d657374616d70223a2231373935363739343935227d
ev_wKxqeOPLoR-v9xkZ41SoLQ	ck_pqOcrZHCVLtg-z74	alice	1795679496.0300593	\\x7b22437265617465644174223a22323032362d31312d32365430373a35313a33362e3033305a222c224944223a2265765f774b7871654f504c6f522d7639786b5a3431536f4c51222c22557064617465644174223a22323032362d31312d32365430373a35313a33362e3033305a222c22617070726f766564223a747275652c22636c69656e745f757365725f6964223a22616c696365222c22646563696465645f6174223a22323032362d31312d32365430373a35313a33362e3033305a222c22646563696465645f6279223a226a6f5849566d425950537a5039746c31564141543734536e747a57416c6475655f3862744a75534f6d6a6b222c226576656e74223a224c4f47494e222c22657870697265735f6174223a22323032362d31312d32365430373a35313a33362e3033305a222c226970223a223132372e302e302e31222c22697373756572223a22636b5f70714f63725a4843564c74672d7a3734222c226c6f636174696f6e223a22556e6b6e6f776e222c226d6574686f64223a22545255535445445f444556494345222c226e6577223a66616c73652c227265717565737465725f6e616d65223a22616c6963652d6c6170746f70222c22737461747573223a22617070726f766564222c2274696d657374616d70223a2231373935363739343936227d
\.


--
-- Data for Name: device_changes; Type: TABLE DATA; Schema: public; Owner: -
--

COPY public.device_changes (id, issuer, client_user_id, device_id, device_name, action, actor, ip, at) FROM stdin;
1	ck_pqOcrZHCVLtg-z74	alice	joXIVmBYPSzP9tl1VAAT74SntzWAldue_8btJuSOmjk	alice-laptop	enrolled	enrollment_token	127.0.0.1	1795679494.5508313
2	ck_pqOcrZHCVLtg-z74	alice	5RKsOxTYnPZvibkHE8qS4Bp4RlL3GjKxelgSKAxY3v8	alice-desktop	enrolled	enrollment_token	127.0.0.1	1795679494.6809707
3	ck_pqOcrZHCVLtg-z74	alice	4uDufFmCCDpVdlHpA0jxLPIEV0YDo5ELCeulfe2aMus	alice-old	enrolled	enrollment_token	127.0.0.1	1795679494.8048992
4	ck_pqOcrZHCVLtg-z74	bob	5izTA9IkksXpuR6FFzY-bFTy1pV5koEdAZEtLovoudE	bob-phone	enrolled	enrollment_token	127.0.0.1	1795679494.9526176
5	ck_pqOcrZHCVLtg-z74	alice	4uDufFmCCDpVdlHpA0jxLPIEV0YDo5ELCeulfe2aMus	alice-old	revoked	joXIVmBYPSzP9tl1VAAT74SntzWAldue_8btJuSOmjk	127.0.0.1	1795679495.1448765
\.


--
-- Data for Name: devices; Type: TABLE DATA; Schema: public; Owner: -
--

COPY public.devices (id, issuer, client_user_id, public_key, name, type, created_at, last_seen_at, revoked_at, totp_secret, totp_last_step, push_endpoint, push_p256dh, push_auth, push_vapid_key, push_updated_at) FROM stdin;
joXIVmBYPSzP9tl1VAAT74SntzWAldue_8btJuSOmjk	ck_pqOcrZHCVLtg-z74	alice	{"crv":"P-256","kty":"EC","y":"JgYFQdxqL54_OsYDSJjWG_tRTQF2qXskKkBxZpavtbY","x":"Ihlb97Wf60zM8nfyEMo9ixP4C7IVB5NaqvDoy4QAw88"}	alice-laptop	cli	1795679494.5508313	1795679494.5508313	\N	\\x01b45aef8c060f7c950ef114e352f33d07f7b32d95b7a4ce0a0701499569aace293de3bdaba88191059de6e00e8c56eb84ae2f1df05bbea322831df544f45b1f3f1e07aaa3	\N	\N	\N	\N	\N	\N
5RKsOxTYnPZvibkHE8qS4Bp4RlL3GjKxelgSKAxY3v8	ck_pqOcrZHCVLtg-z74	alice	{"x":"8BGVQu3824lhZb9hbmcUGpIniw-NX0Zm3fIcC6QuvOk","y":"ZsXUyodDxVxkEvsa3Evj4uUj-oUWksmB6JrlSG9pecU","crv":"P-256","kty":"EC"}	alice-desktop	cli	1795679494.6809707	1795679494.6809707	\N	\\x01b45aef8c060f7c95f36fa361273b4fcf552475a96c7a787eb47112a4ccca973de73241e5410916b4dcb5cea4215adeacaa11e0ffeda17a6e382998ff1a693e82b3a2a5eb	\N	\N	\N	\N	\N	\N
5izTA9IkksXpuR6FFzY-bFTy1pV5koEdAZEtLovoudE	ck_pqOcrZHCVLtg-z74	bob	{"kty":"EC","x":"IZyAuMMU1rwmytgDcTBbRn3P14z0sPno0b6hetP6IG4","y":"Jj5Qx9cWU-KZKKZOjHlPDdsnRNJIB8cJJoV60iQ49nI","crv":"P-256"}	bob-phone	cli	1795679494.9526176	1795679494.9526176	\N	\\x01b45aef8c060f7c9525611968ba450265dd8757a800aca73452844882bed172bbdcc09e454548c77ce3b287888bacd1e03c8d8d380e1a64176be76e43d1e7f4d4e058eebf	\N	\N	\N	\N	\N	\N
4uDufFmCCDpVdlHpA0jxLPIEV0YDo5ELCeulfe2aMus	ck_pqOcrZHCVLtg-z74	alice	{"kty":"EC","x":"4wPkn_dCdRMaIR_UO-c51cbTGiuggAQh5wicTAaU3xc","y":"SPqqb9FzbP09hX0fByf-kxorQti4gRdaJjgKSkAmoAE","crv":"P-256"}	alice-old	cli	1795679494.8048992	1795679494.8048992	1795679495.1448765	\\x01b45aef8c060f7c95609f4dbf0aa1ea6617660372ae3dce5739f7be73dab059a74e1f28d7e2fcb5cf687b3d261ad74d4ca92e06a5f6a6e64e2aef1525a15eb9ba35bbc223	\N	\N	\N	\N	\N	\N
\.


--
-- Data for Name: enrollment_tokens; Type: TABLE DATA; Schema: public; Owner: -
--

COPY public.enrollment_tokens (digest, issuer, client_user_id, created_at, expires_at, used_at) FROM stdin;
\\x5f51bc85d3e59c348683f050b417fbfd083e593693500ebafc2b050c6e712ee5	ck_pqOcrZHCVLtg-z74	alice	1795679494.4483972	1795680094.4483972	1795679494.5508313
\\x735674d574f701d36545cc4d632e36a7be0257bafd988ddd976d84b04926f360	ck_pqOcrZHCVLtg-z74	alice	1795679494.6205955	1795680094.6205955	1795679494.6809707
\\x60a7379d68573d1b9594f47396685bc5a079d9126fdc6f2dd7baa27b771e55ed	ck_pqOcrZHCVLtg-z74	alice	1795679494.7361734	1795680094.7361734	1795679494.8048992
\\xebca2bf171ee438aab3945510dce7d195d89850dcd3e393eb96e8b21940ad07d	ck_pqOcrZHCVLtg-z74	bob	1795679494.8546772	1795680094.8546772	1795679494.9526176
\.


--
-- Data for Name: events; Type: TABLE DATA; Schema: public; Owner: -
--

COPY public.events (id, created_at, updated_at, issuer, client_user_id, name, ip, location, method, status, expires_at, details, requester_name, nonce, match_number, wrong_matches, requester_token_digest, decided_by, decided_at, decision, new_device, code_attempts, requested_by, withdrawn_at, expiry_announced, status_reason) FROM stdin;
ev_kzhrmcRdnEeQ1xvB-S-PeQ	1795679495.3041759	1795679495.4820213	ck_pqOcrZHCVLtg-z74	alice	LOGIN	192.0.2.10	Lyon	TRUSTED_DEVICE	approved	1795679555.3041759	\N	build-host	9jK_sh6WjQ0LeyXhK-oLqQ	87	0	\\x37bdbeb63c1093b3a64aaac59ff1bb50e51807eddc93a5bc49630b77d2bde3fc	joXIVmBYPSzP9tl1VAAT74SntzWAldue_8btJuSOmjk	1795679495.4820213	eyJraWQiOiJqb1hJVm1CWVBTelA5dGwxVkFBVDc0U250eldBbGR1ZV84YnRKdVNPbWprIiwidHlwIjoiY291bnRlcnNpZ24tZGVjaXNpb24rand0IiwiYWxnIjoiRVMyNTYifQ.eyJzaG93biI6IkR2YVdOb2c0OUFETTNvWGpXNGJnb1R0eFZaMUxNVHpuVnZ3THBEM3ZTblkiLCJpYXQiOjE3OTU2Nzk0OTUsImV2dCI6ImV2X2t6aHJtY1JkbkVlUTF4dkItUy1QZVEiLCJhdWQiOiJodHRwOlwvXC8xMjcuMC4wLjE6NDMyMTkiLCJkZWNpc2lvbiI6ImFwcHJvdmUiLCJtYXRjaCI6Ijg3Iiwibm9uY2UiOiI5aktfc2g2V2pRMExleVhoSy1vTHFRIiwianRpIjoiTURxQUIxU2NsaURBNW5MYXhiOW5fUSJ9.JlyESzegkGro-k0uMAD-tTaITYkw6RYK_xH3VJeIOwzVe8FP22LdYSAjvdUPAuVdphlYADOh_muppB8bxYjjEQ	\N	0	backend	\N	f	\N
ev_YnGMzm8LK8e59SdEqeyuLw	1795679495.5362206	1795679495.6952245	ck_pqOcrZHCVLtg-z74	alice	TRANSACTION	127.0.0.1	Unknown	TRUSTED_DEVICE	rejected	1795679555.5362206	Pay 120.00 EUR to ACME	\N	Xaqn2OfFYBQMZO28IaiMtw	84	0	\\xa5df2e2157b40db0e1671ac6c197e7d68e0bbaa8eb1eb4d8394b8fc4e8c4a37b	5RKsOxTYnPZvibkHE8qS4Bp4RlL3GjKxelgSKAxY3v8	1795679495.6952245	eyJraWQiOiI1UktzT3hUWW5QWnZpYmtIRThxUzRCcDRSbEwzR2pLeGVsZ1NLQXhZM3Y4IiwiYWxnIjoiRVMyNTYiLCJ0eXAiOiJjb3VudGVyc2lnbi1kZWNpc2lvbitqd3QifQ.eyJub25jZSI6IlhhcW4yT2ZGWUJRTVpPMjhJYWlNdHciLCJpYXQiOjE3OTU2Nzk0OTUsImp0aSI6InJKNWZhY0tTdU52TTB4SmJtS3pfM1EiLCJzaG93biI6IjROS1FVNVpxN3VDTC1wZTAxVngwcy14UURFYm43dkZ1SUJZQm91WU5ad2siLCJtYXRjaCI6Ijg0IiwiYXVkIjoiaHR0cDpcL1wvMTI3LjAuMC4xOjQzMjE5IiwiZGVjaXNpb24iOiJyZWplY3QiLCJldnQiOiJldl9ZbkdNem04TEs4ZTU5U2RFcWV5dUx3In0.ITL-q7OsqDBOG7FbbTUeDeJ9rdVjla9tXq1DThF449B7HVkttZ7Kj5h-jexJLEuW10Cto_fweoERIzJqsE_wTA	\N	0	backend	\N	f	\N
ev_eZTDZiTeZaDGvBM_eyKW6w	1795679495.7417755	1795679495.9043603	ck_pqOcrZHCVLtg-z74	bob	LOGIN	127.0.0.1	Unknown	TRUSTED_DEVICE	approved	1795679555.7417755	\N	ci-runner	EIlvsJp89JzbhwSStfQ5mw	60	0	\\x82dab7d888cd583ac0cfb7e84fc0ccec7429ea24e987722630215076609cf845	5izTA9IkksXpuR6FFzY-bFTy1pV5koEdAZEtLovoudE	1795679495.9043603	eyJ0eXAiOiJjb3VudGVyc2lnbi1kZWNpc2lvbitqd3QiLCJhbGciOiJFUzI1NiIsImtpZCI6IjVpelRBOUlra3NYcHVSNkZGelktYkZUeTFwVjVrb0VkQVpFdExvdm91ZEUifQ.eyJtYXRjaCI6IjYwIiwianRpIjoiSWlCT2p6QTFvVmpleDNBTkFKdEJCZyIsInNob3duIjoidXh2Z3NLS0l3TG1Rcm5ucFpzaEI3TzgtN2VtZ0dick1weFhfMklXY00ydyIsImlhdCI6MTc5NTY3OTQ5NSwiYXVkIjoiaHR0cDpcL1wvMTI3LjAuMC4xOjQzMjE5IiwiZGVjaXNpb24iOiJhcHByb3ZlIiwibm9uY2UiOiJFSWx2c0pwODlKemJod1NTdGZRNW13IiwiZXZ0IjoiZXZfZVpURFppVGVaYURHdkJNX2V5S1c2dyJ9.3UuGcNuasL233N7xg5CS9Z83m4Pubiy0gCH5F5TfnVF8pUyqSN65IETxa_1BarhFgm9R1Uv89z70nGYrAle7CQ	\N	0	backend	\N	f	\N
ev_wKxqeOPLoR-v9xkZ41SoLQ	1795679496.0300593	1795679496.0300593	ck_pqOcrZHCVLtg-z74	alice	LOGIN	127.0.0.1	Unknown	TRUSTED_DEVICE	approved	1795679496.0300593	\N	alice-laptop	EVILl9fR3bg_UaVcvAfprA	\N	0	\N	joXIVmBYPSzP9tl1VAAT74SntzWAldue_8btJuSOmjk	1795679496.0300593	\N	\N	0	backend	\N	f	\N
ev_z1fMB0nN0JJvYfphntP2SQ	1795679496.0592346	1795679496.0828476	ck_pqOcrZHCVLtg-z74	alice	LOGIN	127.0.0.1	Unknown	TRUSTED_DEVICE	pending	1795679496.0828476	\N	withdrawn-host	JSDZro489J8-NUMOZfr_0A	37	0	\\x336d81a8ade78af0b2eb263ff27e3a5148d37b43135b3a02475f6f7b079f74ac	\N	\N	\N	\N	0	backend	1795679496.0828476	f	\N
ev_EsGaADmQKCDWEKiz2BarYQ	1795679496.1043258	1795679496.1043258	ck_pqOcrZHCVLtg-z74	alice	LOGIN	127.0.0.1	Unknown	TRUSTED_DEVICE	pending	1795679556.1043258	\N	left-pending	UgSK-_Ow6XcF__XMj8aS4w	84	0	\\xe85cd14c31505b17a9ef671a2ffe8d098fc98559e0046b9b787d987cbd3cb852	\N	\N	\N	\N	0	backend	\N	f	\N
\.


--
-- Data for Name: outbox; Type: TABLE DATA; Schema: public; Owner: -
--

COPY public.outbox (id, kind, target, event_id, payload, created_at, deliver_until, next_attempt_at, attempts, state, last_error, finished_at, claim, lease_until) FROM stdin;
\.


--
-- Data for Name: proof_ids; Type: TABLE DATA; Schema: public; Owner: -
--

COPY public.proof_ids (device_id, jti, expires_at) FROM stdin;
joXIVmBYPSzP9tl1VAAT74SntzWAldue_8btJuSOmjk	proof:do_fT2Gdh14O_exNZvSwPg	1795679614
joXIVmBYPSzP9tl1VAAT74SntzWAldue_8btJuSOmjk	proof:LBIdxDv5rVgbyKc95KTkEg	1795679614
5RKsOxTYnPZvibkHE8qS4Bp4RlL3GjKxelgSKAxY3v8	proof:bZnYd0f7JYBDkAxn6ioKWg	1795679614
5RKsOxTYnPZvibkHE8qS4Bp4RlL3GjKxelgSKAxY3v8	proof:Ix1LqSkARJjUlVzYSWUXmw	1795679614
4uDufFmCCDpVdlHpA0jxLPIEV0YDo5ELCeulfe2aMus	proof:LZztFDVN6TVFsp5agVrckw	1795679614
4uDufFmCCDpVdlHpA0jxLPIEV0YDo5ELCeulfe2aMus	proof:SGvep7l8DE5SG2itnfvvnA	1795679614
5izTA9IkksXpuR6FFzY-bFTy1pV5koEdAZEtLovoudE	proof:9YxVWYvA5YUOnA-Hre_uiA	1795679614
5izTA9IkksXpuR6FFzY-bFTy1pV5koEdAZEtLovoudE	proof:64xDldUjhYFkJ0PqC8plMw	1795679614
joXIVmBYPSzP9tl1VAAT74SntzWAldue_8btJuSOmjk	proof:LHlLWzYZlWL1_1TEKeIezQ	1795679615
joXIVmBYPSzP9tl1VAAT74SntzWAldue_8btJuSOmjk	proof:QWsTzs5l6ssKyO6j046rgg	1795679615
5izTA9IkksXpuR6FFzY-bFTy1pV5koEdAZEtLovoudE	proof:MTKgR1X32RL4TsoVSMFniA	1795679615
joXIVmBYPSzP9tl1VAAT74SntzWAldue_8btJuSOmjk	proof:52FXyqy7VBryQsGPMlJWgw	1795679615
joXIVmBYPSzP9tl1VAAT74SntzWAldue_8btJuSOmjk	proof:6xcdJyI-ONyCkk-WRvviMg	1795679615
joXIVmBYPSzP9tl1VAAT74SntzWAldue_8btJuSOmjk	proof:IoIMjFrMu6ZJ5ENr2zFggA	1795679615
joXIVmBYPSzP9tl1VAAT74SntzWAldue_8btJuSOmjk	decision:MDqAB1ScliDA5nLaxb9n_Q	1795679615.4820213
5RKsOxTYnPZvibkHE8qS4Bp4RlL3GjKxelgSKAxY3v8	proof:5ja-xnIBU_Fm8e25ORIANQ	1795679615
5RKsOxTYnPZvibkHE8qS4Bp4RlL3GjKxelgSKAxY3v8	proof:zwQtY48oS-q1rNeFHwswdA	1795679615
5RKsOxTYnPZvibkHE8qS4Bp4RlL3GjKxelgSKAxY3v8	proof:K94xeiLZJeZryxcpgicgUQ	1795679615
5RKsOxTYnPZvibkHE8qS4Bp4RlL3GjKxelgSKAxY3v8	decision:rJ5facKSuNvM0xJbmKz_3Q	1795679615.6952245
5izTA9IkksXpuR6FFzY-bFTy1pV5koEdAZEtLovoudE	proof:804KCaN1tG1FlCuWALIYtA	1795679615
5izTA9IkksXpuR6FFzY-bFTy1pV5koEdAZEtLovoudE	proof:sLvnEY4DD_XIrpwdIa_DFA	1795679615
5izTA9IkksXpuR6FFzY-bFTy1pV5koEdAZEtLovoudE	proof:tj9JhbWukCDunJ10XZB4lg	1795679615
5izTA9IkksXpuR6FFzY-bFTy1pV5koEdAZEtLovoudE	decision:IiBOjzA1oVjex3ANAJtBBg	1795679615.9043603
joXIVmBYPSzP9tl1VAAT74SntzWAldue_8btJuSOmjk	proof:sq98T7Wp54lOM4eVw4-5aA	1795679616
\.


--
-- Data for Name: recovery_codes; Type: TABLE DATA; Schema: public; Owner: -
--

COPY public.recovery_codes (digest, issuer, client_user_id, created_at, used_at) FROM stdin;
\\xcd195e5e29aace28b7ed4107ad92caeb9683ab374d7c6ccfe256c33edc7d312e	ck_pqOcrZHCVLtg-z74	bob	1795679495.2680392	\N
\\x91048e28b1d91855d3a804986243c0cbe1be3dc931919291ee409d1d8776f422	ck_pqOcrZHCVLtg-z74	bob	1795679495.2680392	\N
\\x78f10737edaa750a67c67be396bb9249ab236fae77fc64f881406e6d3331c6c8	ck_pqOcrZHCVLtg-z74	bob	1795679495.2680392	\N
\\x71bdeae770ace4f581ebc727eaeba11849d1c9bc608da2d8a38e30d651a57145	ck_pqOcrZHCVLtg-z74	bob	1795679495.2680392	\N
\\xa30aea84edcc2ff4508fcca5aa31a28862842be97c4966095180ab3884cf439e	ck_pqOcrZHCVLtg-z74	bob	1795679495.2680392	\N
\\xfbe1d3522b7352af3bd678e123f2050cbd0e8f65a609926619b5202ba4fad5d1	ck_pqOcrZHCVLtg-z74	bob	1795679495.2680392	\N
\\xdf95b72048e2af909ad5082ea8dc435dd4368e5aabc3305799405dce55703873	ck_pqOcrZHCVLtg-z74	bob	1795679495.2680392	\N
\\xd364d6b415578322d7b0267512cdb99f3946a722b1018b7d20a3fa6c66cf62b8	ck_pqOcrZHCVLtg-z74	bob	1795679495.2680392	\N
\\x88cbdaa0454e6812238ca2b9a384783d114f53f2eb7387612631a53f2fb5c64a	ck_pqOcrZHCVLtg-z74	bob	1795679495.2680392	\N
\\x9e221eb5d50071c0dd92301e644e7750cb9bc2f29aa851e422f45c5cb3b7f045	ck_pqOcrZHCVLtg-z74	bob	1795679495.2680392	\N
\.


--
-- Data for Name: refresh_tokens; Type: TABLE DATA; Schema: public; Owner: -
--

COPY public.refresh_tokens (digest, family_id, api_key_id, identity_id, created_at, expires_at, rotated_at, revoked_at, auth_time, client_user_id, acr) FROM stdin;
\.


--
-- Data for Name: request_counts; Type: TABLE DATA; Schema: public; Owner: -
--

COPY public.request_counts (scope, key, minute, count) FROM stdin;
\.


--
-- Data for Name: signing_keys; Type: TABLE DATA; Schema: public; Owner: -
--

COPY public.signing_keys (id, private_key_pem, created_at) FROM stdin;
zqvSqpuyIetmI4tM0hD7MiAzoaeRS1hsHDkDiZMaIlE	-----BEGIN PRIVATE KEY-----\nMIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgtVyMel7rVZ87v/wS\n8ANVECO6NGLAGyzPd2bCJQjaGeWhRANCAARZoP8YxMZoVjQZyRs7y7cP1O4QEsvk\nHhrzUqRPNTEmblVOZjy0irg1GxUvii2Zj3pGH8kcjudLm1jSRe10K/EE\n-----END PRIVATE KEY-----	1795679494.2190597
\.


--
-- Data for Name: user_protections; Type: TABLE DATA; Schema: public; Owner: -
--

COPY public.user_protections (issuer, client_user_id, until) FROM stdin;
\.


--
-- Data for Name: vapid_keys; Type: TABLE DATA; Schema: public; Owner: -
--

COPY public.vapid_keys (id, private_key_pem, created_at) FROM stdin;
MEf976dXQxBaRDhOCE-DDwpJSfOx8myd5_1OY7Fmfns	-----BEGIN PRIVATE KEY-----\nMIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgTz88qH7GKZhIKI0Y\nfK284kvSVckK97GhCJeMJZHYCnehRANCAARFhjmJeYWKNJL38qKQlSU4FA2IVRtg\nj7Gn698vaTuLiDF7vYlluwrM48ezLtzu+9WDYUAZreMZg3S1NubTOBa0\n-----END PRIVATE KEY-----	1795679494.2092538
\.


--
-- Data for Name: verification_challenges; Type: TABLE DATA; Schema: public; Owner: -
--

COPY public.verification_challenges (id, api_key_id, identifier_type, identifier, code_digest, code_expires_at, code_challenge, redirect_url, state, created_at, failed_attempts, sends, verified_at, authorization_code_digest, authorization_code_expires_at, redeemed_at, user_agent, ip, nonce) FROM stdin;
\.


--
-- Data for Name: verified_identities; Type: TABLE DATA; Schema: public; Owner: -
--

COPY public.verified_identities (id, user_id, api_key_id, identifier_type, identifier, created_at, updated_at) FROM stdin;
\.


--
-- Data for Name: webhook_endpoints; Type: TABLE DATA; Schema: public; Owner: -
--

COPY public.webhook_endpoints (id, api_key_id, url, types, secret, previous_secret, previous_until, created_at, failing_since, disabled_at, disabled_reason) FROM stdin;
\.


--
-- Name: api_key_changes_id_seq; Type: SEQUENCE SET; Schema: public; Owner: -
--

SELECT pg_catalog.setval('public.api_key_changes_id_seq', 1, true);


--
-- Name: device_changes_id_seq; Type: SEQUENCE SET; Schema: public; Owner: -
--

SELECT pg_catalog.setval('public.device_changes_id_seq', 5, true);


--
-- Name: api_key_changes api_key_changes_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.api_key_changes
    ADD CONSTRAINT api_key_changes_pkey PRIMARY KEY (id);


--
-- Name: api_key_redirect_urls api_key_redirect_urls_api_key_id_url_key; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.api_key_redirect_urls
    ADD CONSTRAINT api_key_redirect_urls_api_key_id_url_key UNIQUE (api_key_id, url);


--
-- Name: api_key_redirect_urls api_key_redirect_urls_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.api_key_redirect_urls
    ADD CONSTRAINT api_key_redirect_urls_pkey PRIMARY KEY (api_key_id, "position");


--
-- Name: api_keys api_keys_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.api_keys
    ADD CONSTRAINT api_keys_pkey PRIMARY KEY (id);


--
-- Name: ciba_clients ciba_clients_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.ciba_clients
    ADD CONSTRAINT ciba_clients_pkey PRIMARY KEY (api_key_id);


--
-- Name: ciba_requests ciba_requests_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.ciba_requests
    ADD CONSTRAINT ciba_requests_pkey PRIMARY KEY (event_id);


--
-- Name: code_failures code_failures_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.code_failures
    ADD CONSTRAINT code_failures_pkey PRIMARY KEY (issuer, client_user_id);


--
-- Name: countersign_migrations countersign_migrations_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.countersign_migrations
    ADD CONSTRAINT countersign_migrations_pkey PRIMARY KEY (id);


--
-- Name: decision_records decision_records_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.decision_records
    ADD CONSTRAINT decision_records_pkey PRIMARY KEY (event_id);


--
-- Name: device_changes device_changes_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.device_changes
    ADD CONSTRAINT device_changes_pkey PRIMARY KEY (id);


--
-- Name: devices devices_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.devices
    ADD CONSTRAINT devices_pkey PRIMARY KEY (id);


--
-- Name: enrollment_tokens enrollment_tokens_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.enrollment_tokens
    ADD CONSTRAINT enrollment_tokens_pkey PRIMARY KEY (digest);


--
-- Name: events events_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.events
    ADD CONSTRAINT events_pkey PRIMARY KEY (id);


--
-- Name: outbox outbox_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.outbox
    ADD CONSTRAINT outbox_pkey PRIMARY KEY (id);


--
-- Name: proof_ids proof_ids_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.proof_ids
    ADD CONSTRAINT proof_ids_pkey PRIMARY KEY (device_id, jti);


--
-- Name: recovery_codes recovery_codes_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.recovery_codes
    ADD CONSTRAINT recovery_codes_pkey PRIMARY KEY (digest);


--
-- Name: refresh_tokens refresh_tokens_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.refresh_tokens
    ADD CONSTRAINT refresh_tokens_pkey PRIMARY KEY (digest);


--
-- Name: request_counts request_counts_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.request_counts
    ADD CONSTRAINT request_counts_pkey PRIMARY KEY (scope, key, minute);


--
-- Name: signing_keys signing_keys_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.signing_keys
    ADD CONSTRAINT signing_keys_pkey PRIMARY KEY (id);


--
-- Name: user_protections user_protections_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.user_protections
    ADD CONSTRAINT user_protections_pkey PRIMARY KEY (issuer, client_user_id);


--
-- Name: vapid_keys vapid_keys_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.vapid_keys
    ADD CONSTRAINT vapid_keys_pkey PRIMARY KEY (id);


--
-- Name: verification_challenges verification_challenges_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.verification_challenges
    ADD CONSTRAINT verification_challenges_pkey PRIMARY KEY (id);


--
-- Name: verified_identities verified_identities_api_key_id_identifier_type_identifier_key; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.verified_identities
    ADD CONSTRAINT verified_identities_api_key_id_identifier_type_identifier_key UNIQUE (api_key_id, identifier_type, identifier);


--
-- Name: verified_identities verified_identities_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.verified_identities
    ADD CONSTRAINT verified_identities_pkey PRIMARY KEY (id);


--
-- Name: webhook_endpoints webhook_endpoints_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.webhook_endpoints
    ADD CONSTRAINT webhook_endpoints_pkey PRIMARY KEY (id);


--
-- Name: api_key_changes_by_key; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX api_key_changes_by_key ON public.api_key_changes USING btree (api_key_id, id);


--
-- Name: challenges_by_identifier; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX challenges_by_identifier ON public.verification_challenges USING btree (identifier, created_at);


--
-- Name: challenges_by_ip; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX challenges_by_ip ON public.verification_challenges USING btree (ip, created_at);


--
-- Name: ciba_requests_created; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX ciba_requests_created ON public.ciba_requests USING btree (created_at);


--
-- Name: decision_records_user; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX decision_records_user ON public.decision_records USING btree (issuer, client_user_id, decided_at);


--
-- Name: device_changes_by_user; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX device_changes_by_user ON public.device_changes USING btree (issuer, client_user_id, id);


--
-- Name: devices_by_user; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX devices_by_user ON public.devices USING btree (issuer, client_user_id);


--
-- Name: events_by_expiry; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX events_by_expiry ON public.events USING btree (expires_at);


--
-- Name: events_by_user; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX events_by_user ON public.events USING btree (issuer, client_user_id, created_at);


--
-- Name: events_pending; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX events_pending ON public.events USING btree (issuer, client_user_id, expires_at) WHERE (status = 'pending'::text);


--
-- Name: events_pending_by_address; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX events_pending_by_address ON public.events USING btree (ip, expires_at) WHERE ((status = 'pending'::text) AND (requested_by = 'requester'::text));


--
-- Name: events_rejected; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX events_rejected ON public.events USING btree (issuer, client_user_id, decided_at) WHERE (status = 'rejected'::text);


--
-- Name: events_requested_by_address; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX events_requested_by_address ON public.events USING btree (ip, created_at) WHERE (requested_by = 'requester'::text);


--
-- Name: events_unannounced_expiry; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX events_unannounced_expiry ON public.events USING btree (expires_at) WHERE ((status = 'pending'::text) AND (NOT expiry_announced) AND (withdrawn_at IS NULL));


--
-- Name: outbox_due; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX outbox_due ON public.outbox USING btree (next_attempt_at) WHERE (state = 'queued'::text);


--
-- Name: outbox_finished; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX outbox_finished ON public.outbox USING btree (finished_at) WHERE (state <> 'queued'::text);


--
-- Name: outbox_target; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX outbox_target ON public.outbox USING btree (target, created_at);


--
-- Name: proof_ids_by_expiry; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX proof_ids_by_expiry ON public.proof_ids USING btree (expires_at);


--
-- Name: recovery_codes_by_user; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX recovery_codes_by_user ON public.recovery_codes USING btree (issuer, client_user_id);


--
-- Name: refresh_tokens_by_family; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX refresh_tokens_by_family ON public.refresh_tokens USING btree (family_id);


--
-- Name: webhook_endpoints_key; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX webhook_endpoints_key ON public.webhook_endpoints USING btree (api_key_id);


--
-- Name: api_key_redirect_urls api_key_redirect_urls_api_key_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.api_key_redirect_urls
    ADD CONSTRAINT api_key_redirect_urls_api_key_id_fkey FOREIGN KEY (api_key_id) REFERENCES public.api_keys(id) ON DELETE CASCADE;


--
-- Name: webhook_endpoints webhook_endpoints_api_key_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.webhook_endpoints
    ADD CONSTRAINT webhook_endpoints_api_key_id_fkey FOREIGN KEY (api_key_id) REFERENCES public.api_keys(id);


--
-- PostgreSQL database dump complete
--

\unrestrict zVgmw97zeJQuxU84hJwaOqQ5V039bnD6wkHaIYBIZgVhdPrNfnETmIMSdzHxmDO

