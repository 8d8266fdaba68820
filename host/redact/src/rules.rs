//! The detectors, as data: one table of rules, each a regex whose named
//! group `secret` is the part replaced (the rest of the match is context
//! that stays), the lowercase keywords that gate it (the rule is tried only
//! when one of them occurs in the text, ASCII case-insensitively; a rule
//! without keywords is always tried), an optional minimum Shannon entropy
//! of the secret, and an optional value check done in code.
//!
//! Rules come in three groups, in the order they win overlaps: `Specific`
//! formats (a vendor's token with its own prefix or shape), `Structured`
//! secrets (JWTs, private key blocks, passwords in URLs and connection
//! strings, authorization headers) and `Generic` assignments (`NAME=value`
//! where the name says it is a secret).
//!
//! The shapes are public facts about each vendor's tokens (their documented
//! prefixes and lengths); every pattern is written for this crate. Patterns
//! use ASCII word boundaries (`(?-u:\b)`) so the regex engine can stay on
//! its fast DFA for any input.

use serde::Serialize;

/// Version of the rule table. Bump it whenever a rule is added, removed or
/// changed (pattern, keywords, entropy, check): callers record it beside
/// redacted output, so text redacted under an older table can be found and
/// redacted again.
pub const RULESET_VERSION: u32 = 1;

/// The three kinds of rule, in priority order (earlier wins an overlap).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Group {
    /// A vendor format recognised by its own prefix or shape.
    Specific,
    /// A JWT, private key block, URL/connection-string password or
    /// authorization header.
    Structured,
    /// A `name = value` assignment whose name says secret.
    Generic,
}

/// A check done in code on a candidate, beyond the regex and entropy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Check {
    /// None: the regex (and entropy) decide.
    None,
    /// The pattern's `name` group (extended back over `[A-Za-z0-9_.-]`)
    /// must look like a secret's name and the `secret` must look like a
    /// literal value (see `generic.rs`).
    Assignment,
    /// The `secret` must not be a placeholder, variable or template
    /// (`${PASS}`, `<password>`, `****`): for URL and connection-string
    /// passwords.
    Password,
}

/// One rule of the table.
#[derive(Debug, Clone, Serialize)]
pub struct RuleInfo {
    /// Kebab-case id; it names the rule in placeholders.
    pub id: &'static str,
    pub group: Group,
    pub description: &'static str,
    /// The shape of what it finds, for docs (never a real secret).
    pub example: &'static str,
    /// Lowercase literals, one of which occurs in every match.
    pub keywords: &'static [&'static str],
    /// Minimum Shannon entropy (bits per byte) of the secret.
    pub min_entropy: Option<f64>,
    pub check: Check,
    /// The regex, with a named group `secret`.
    pub pattern: &'static str,
}

const fn rule(
    id: &'static str,
    group: Group,
    description: &'static str,
    example: &'static str,
    keywords: &'static [&'static str],
    pattern: &'static str,
) -> RuleInfo {
    RuleInfo {
        id,
        group,
        description,
        example,
        keywords,
        min_entropy: None,
        check: Check::None,
        pattern,
    }
}

impl RuleInfo {
    const fn entropy(mut self, bits: f64) -> RuleInfo {
        self.min_entropy = Some(bits);
        self
    }

    const fn check(mut self, check: Check) -> RuleInfo {
        self.check = check;
        self
    }
}

use Group::{Generic, Specific, Structured};

/// The built-in rules, in table order (which also breaks priority ties).
pub fn builtin() -> &'static [RuleInfo] {
    RULES
}

#[rustfmt::skip]
static RULES: &[RuleInfo] = &[
    // ---- AI providers -------------------------------------------------
    rule("anthropic-api-key", Specific, "Anthropic API or admin key", "sk-ant-api03-<93+ base64url>",
        &["sk-ant-"],
        r"(?-u:\b)(?P<secret>sk-ant-(?:api|admin|oat|sid)\d{2}-[A-Za-z0-9_-]{32,})"),
    rule("openrouter-api-key", Specific, "OpenRouter API key", "sk-or-v1-<64 hex>",
        &["sk-or-"],
        r"(?-u:\b)(?P<secret>sk-or-v1-[a-f0-9]{64})(?-u:\b)"),
    rule("openai-api-key", Specific, "OpenAI API key (user, project, service account or admin)", "sk-proj-<48+ base64url>",
        &["sk-"],
        r"(?-u:\b)(?P<secret>sk-(?:(?:proj|svcacct|admin)-[A-Za-z0-9_-]{40,}|[A-Za-z0-9]{48}|[A-Za-z0-9_-]{20,}T3BlbkFJ[A-Za-z0-9_-]{20,}))")
        .entropy(3.5),
    rule("google-api-key", Specific, "Google API key (Gemini, Maps, Firebase, ...)", "AIza<35 base64url>",
        &["aiza"],
        r"(?-u:\b)(?P<secret>AIza[0-9A-Za-z_-]{35})"),
    rule("google-oauth-client-secret", Specific, "Google OAuth client secret", "GOCSPX-<28 base64url>",
        &["gocspx-"],
        r"(?-u:\b)(?P<secret>GOCSPX-[A-Za-z0-9_-]{28})"),
    rule("google-oauth-access-token", Specific, "Google OAuth access token", "ya29.<50+ base64url>",
        &["ya29."],
        r"(?-u:\b)(?P<secret>ya29\.[A-Za-z0-9_-]{50,})").entropy(3.5),
    rule("groq-api-key", Specific, "Groq API key", "gsk_<52 base62>",
        &["gsk_"],
        r"(?-u:\b)(?P<secret>gsk_[A-Za-z0-9]{52})(?-u:\b)"),
    rule("replicate-api-token", Specific, "Replicate API token", "r8_<37 base62>",
        &["r8_"],
        r"(?-u:\b)(?P<secret>r8_[A-Za-z0-9]{37})(?-u:\b)"),
    rule("perplexity-api-key", Specific, "Perplexity API key", "pplx-<48 base62>",
        &["pplx-"],
        r"(?-u:\b)(?P<secret>pplx-[A-Za-z0-9]{48})(?-u:\b)"),
    rule("xai-api-key", Specific, "xAI (Grok) API key", "xai-<80 base62>",
        &["xai-"],
        r"(?-u:\b)(?P<secret>xai-[A-Za-z0-9]{80})(?-u:\b)"),
    rule("huggingface-token", Specific, "Hugging Face access token", "hf_<34 letters>",
        &["hf_"],
        r"(?-u:\b)(?P<secret>hf_[A-Za-z0-9]{34,40})(?-u:\b)").entropy(3.5),
    rule("langsmith-api-key", Specific, "LangSmith API key", "lsv2_pt_<32 hex>_<10 hex>",
        &["lsv2_"],
        r"(?-u:\b)(?P<secret>lsv2_(?:pt|sk)_[a-f0-9]{32}_[a-f0-9]{10})(?-u:\b)"),
    rule("tavily-api-key", Specific, "Tavily API key", "tvly-<32 base62>",
        &["tvly-"],
        r"(?-u:\b)(?P<secret>tvly-(?:dev-|prod-)?[A-Za-z0-9]{32})(?-u:\b)"),
    rule("pinecone-api-key", Specific, "Pinecone API key", "pcsk_<5+ base62>_<60+ base62>",
        &["pcsk_"],
        r"(?-u:\b)(?P<secret>pcsk_[A-Za-z0-9]{4,10}_[A-Za-z0-9]{50,})(?-u:\b)"),
    rule("mistral-api-key", Specific, "Mistral API key (near a mistral name)", "MISTRAL_API_KEY=<32 base62>",
        &["mistral"],
        r#"(?i)mistral[a-z0-9_.-]{0,30}\\?["']?\s*(?::=|=>|=|:)\s*\\?["']?(?P<secret>(?-i:[A-Za-z0-9]{32}))(?-u:\b)"#)
        .entropy(3.5),
    // ---- Cloud --------------------------------------------------------
    rule("aws-access-key-id", Specific, "AWS access key id", "AKIA<16 upper base32>",
        &["akia", "asia", "abia", "acca", "a3t", "agpa", "aida", "aroa", "aipa", "anpa", "anva"],
        r"(?-u:\b)(?P<secret>(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AROA|AIPA|ANPA|ANVA)[A-Z2-7]{16})(?-u:\b)")
        .entropy(3.0),
    rule("aws-secret-access-key", Specific, "AWS secret access key (near an aws or secret name)", "aws_secret_access_key = <40 base64>",
        &["aws", "secret"],
        r#"(?i)(?:aws|secret)[a-z0-9_.-]{0,30}\\?["']?\s*(?::=|=>|=|:)\s*\\?["']?(?P<secret>(?-i:[A-Za-z0-9/+]{40}))(?:[^A-Za-z0-9/+=]|$)"#)
        .entropy(4.0),
    rule("azure-storage-key", Specific, "Azure storage account / Service Bus key in a connection string", "AccountKey=<86 base64>==",
        &["accountkey=", "sharedaccesskey="],
        r"(?i)(?:AccountKey|SharedAccessKey)=(?P<secret>(?-i:[A-Za-z0-9+/]{40,}={0,2}))").entropy(4.0),
    rule("azure-client-secret", Specific, "Azure AD (Entra) client secret", "<3 chars><digit>Q~<31-34 chars>",
        &["q~"],
        r"(?-u:\b)(?P<secret>[A-Za-z0-9_~.-]{3}[0-9]Q~[A-Za-z0-9_~.-]{31,34})(?:[^A-Za-z0-9_~.-]|$)").entropy(3.5),
    rule("gcp-service-account-key", Specific, "GCP service-account JSON private key", r#""private_key": "-----BEGIN PRIVATE KEY-----\n<base64>\n-----END PRIVATE KEY-----\n""#,
        &["private_key"],
        r#"\\?"private_key\\?"\s*:\s*\\?"-----BEGIN PRIVATE KEY-----(?:\\\\n|\\n|\s)*(?P<secret>[A-Za-z0-9+/=\\\s]*?[A-Za-z0-9+/=])(?:\\\\n|\\n|\s)*-----END PRIVATE KEY-----"#),
    rule("gcp-private-key-id", Specific, "GCP service-account JSON private key id", r#""private_key_id": "<40 hex>""#,
        &["private_key_id"],
        r#"\\?"private_key_id\\?"\s*:\s*\\?"(?P<secret>[a-f0-9]{40})\\?""#),
    rule("digitalocean-token", Specific, "DigitalOcean personal access, OAuth or refresh token", "dop_v1_<64 hex>",
        &["dop_v1_", "doo_v1_", "dor_v1_"],
        r"(?-u:\b)(?P<secret>do[por]_v1_[a-f0-9]{64})(?-u:\b)"),
    rule("heroku-api-key", Specific, "Heroku API key", "HRKU-<60 base64url>",
        &["hrku-"],
        r"(?-u:\b)(?P<secret>HRKU-[A-Za-z0-9_-]{30,})"),
    rule("heroku-api-key-legacy", Specific, "Heroku legacy API key (a UUID near a heroku name)", "HEROKU_API_KEY=<uuid>",
        &["heroku"],
        r#"(?i)heroku[a-z0-9_.-]{0,30}\\?["']?\s*(?::=|=>|=|:)\s*\\?["']?(?P<secret>[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})(?-u:\b)"#),
    rule("vercel-token", Specific, "Vercel token", "vcp_<24+ base62>",
        &["vcp_", "vci_", "vca_", "vcr_", "vck_"],
        r"(?-u:\b)(?P<secret>vc[pirak]_[A-Za-z0-9]{24,60})(?-u:\b)"),
    rule("vercel-token-legacy", Specific, "Vercel legacy token (near a vercel name)", "VERCEL_TOKEN=<24 base62>",
        &["vercel"],
        r#"(?i)vercel[a-z0-9_.-]{0,30}\\?["']?\s*(?::=|=>|=|:)\s*\\?["']?(?P<secret>(?-i:[A-Za-z0-9]{24}))(?-u:\b)"#)
        .entropy(3.5),
    rule("supabase-token", Specific, "Supabase personal access token or secret key", "sbp_<40 hex>",
        &["sbp_", "sb_secret_"],
        r"(?-u:\b)(?P<secret>sbp_[a-f0-9]{40}(?-u:\b)|sb_secret_[A-Za-z0-9_-]{24,})"),
    rule("cloudflare-api-token", Specific, "Cloudflare API token or global key (near a cloudflare name)", "CLOUDFLARE_API_TOKEN=<40 base64url>",
        &["cloudflare", "cf_api"],
        r#"(?i)(?:cloudflare|cf_api)[a-z0-9_.-]{0,30}\\?["']?\s*(?::=|=>|=|:)\s*\\?["']?(?P<secret>(?-i:[A-Za-z0-9_-]{37,40}))(?:[^A-Za-z0-9_-]|$)"#)
        .entropy(3.5),
    rule("netlify-token", Specific, "Netlify personal access token", "nfp_<36 base62>",
        &["nfp_"],
        r"(?-u:\b)(?P<secret>nfp_[A-Za-z0-9]{36,40})(?-u:\b)"),
    rule("flyio-token", Specific, "Fly.io token", "fm2_<base64>",
        &["fm1", "fm2_", "flyv1 "],
        r"(?-u:\b)(?P<secret>fm[12][ar]?_[A-Za-z0-9+/=]{60,})"),
    rule("render-api-key", Specific, "Render API key", "rnd_<32 base62>",
        &["rnd_"],
        r"(?-u:\b)(?P<secret>rnd_[A-Za-z0-9]{32})(?-u:\b)"),
    rule("pulumi-token", Specific, "Pulumi access token", "pul-<40 hex>",
        &["pul-"],
        r"(?-u:\b)(?P<secret>pul-[a-f0-9]{40})(?-u:\b)"),
    rule("terraform-cloud-token", Specific, "Terraform Cloud / HCP API token", "<14 base62>.atlasv1.<60+ base64url>",
        &[".atlasv1."],
        r"(?-u:\b)(?P<secret>[A-Za-z0-9]{14}\.atlasv1\.[A-Za-z0-9_=-]{60,})"),
    rule("vault-token", Specific, "HashiCorp Vault service, batch or recovery token", "hvs.<90+ base64url>",
        &["hvs.", "hvb.", "hvr."],
        r"(?-u:\b)(?P<secret>hv[sbr]\.[A-Za-z0-9_-]{24,})"),
    rule("doppler-token", Specific, "Doppler token", "dp.pt.<40+ base62>",
        &["dp.pt.", "dp.st.", "dp.sa.", "dp.ct.", "dp.scim.", "dp.audit."],
        r"(?-u:\b)(?P<secret>dp\.(?:pt|st|sa|ct|scim|audit)\.[A-Za-z0-9]{40,})"),
    rule("databricks-token", Specific, "Databricks access token", "dapi<32 hex>",
        &["dapi"],
        r"(?-u:\b)(?P<secret>dapi[a-f0-9]{32}(?:-\d)?)(?-u:\b)"),
    // ---- Source hosting and packages -----------------------------------
    rule("github-token", Specific, "GitHub classic personal access token", "ghp_<36 base62>",
        &["ghp_"],
        r"(?-u:\b)(?P<secret>ghp_[A-Za-z0-9]{36})(?-u:\b)"),
    rule("github-fine-grained-token", Specific, "GitHub fine-grained personal access token", "github_pat_<82 base62 and _>",
        &["github_pat_"],
        r"(?-u:\b)(?P<secret>github_pat_[A-Za-z0-9_]{82})(?-u:\b)"),
    rule("github-oauth-token", Specific, "GitHub OAuth access token", "gho_<36 base62>",
        &["gho_"],
        r"(?-u:\b)(?P<secret>gho_[A-Za-z0-9]{36})(?-u:\b)"),
    rule("github-app-token", Specific, "GitHub App user-to-server or installation token", "ghs_<36 base62>",
        &["ghu_", "ghs_"],
        r"(?-u:\b)(?P<secret>gh[us]_[A-Za-z0-9]{36})(?-u:\b)"),
    rule("github-refresh-token", Specific, "GitHub refresh token", "ghr_<36+ base62>",
        &["ghr_"],
        r"(?-u:\b)(?P<secret>ghr_[A-Za-z0-9]{36,76})(?-u:\b)"),
    rule("gitlab-token", Specific, "GitLab personal access token", "glpat-<20+ base64url>",
        &["glpat-"],
        r"(?-u:\b)(?P<secret>glpat-[A-Za-z0-9_-]{20,}(?:\.[0-9a-z]{2}\.[0-9a-z]{7,9})?)"),
    rule("gitlab-other-token", Specific, "GitLab deploy, runner, trigger, feed, CI, OAuth or agent token", "glrt-<20+ base64url>",
        &["gldt-", "glrt-", "glptt-", "glft-", "glsoat-", "gloas-", "glcbt-", "glimt-", "glagent-", "gr1348941"],
        r"(?-u:\b)(?P<secret>(?:gldt|glrt|glptt|glft|glsoat|gloas|glcbt|glimt|glagent)-[A-Za-z0-9_-]{20,}|GR1348941[A-Za-z0-9_-]{20,})"),
    rule("npm-token", Specific, "npm access token", "npm_<36 base62>",
        &["npm_"],
        r"(?-u:\b)(?P<secret>npm_[A-Za-z0-9]{36})(?-u:\b)"),
    rule("pypi-token", Specific, "PyPI upload token", "pypi-AgEIcHlwaS5vcmc<50+ base64url>",
        &["pypi-ageichlwas5vcmc"],
        r"(?-u:\b)(?P<secret>pypi-AgEIcHlwaS5vcmc[A-Za-z0-9_-]{50,})"),
    rule("dockerhub-token", Specific, "Docker Hub personal or organisation access token", "dckr_pat_<27 base64url>",
        &["dckr_pat_", "dckr_oat_"],
        r"(?-u:\b)(?P<secret>dckr_(?:pat|oat)_[A-Za-z0-9_-]{27,})"),
    rule("postman-api-key", Specific, "Postman API key", "PMAK-<24 hex>-<34 hex>",
        &["pmak-"],
        r"(?-u:\b)(?P<secret>PMAK-[a-f0-9]{24}-[a-f0-9]{34})(?-u:\b)"),
    rule("sentry-auth-token", Specific, "Sentry organisation or user auth token", "sntrys_<base64>",
        &["sntrys_", "sntryu_"],
        r"(?-u:\b)(?P<secret>sntry[su]_[A-Za-z0-9+/=_-]{40,})"),
    rule("sentry-dsn", Specific, "Sentry DSN public key (in its https URL)", "https://<32 hex>@o<digits>.ingest.sentry.io/<digits>",
        &["sentry.io"],
        r"https://(?P<secret>[a-f0-9]{32})@[a-z0-9.-]*(?-u:\b)sentry\.io/\d+"),
    rule("grafana-token", Specific, "Grafana Cloud or service-account token", "glsa_<32 base62>_<8 hex>",
        &["glc_", "glsa_"],
        r"(?-u:\b)(?P<secret>glc_[A-Za-z0-9+/]{32,}={0,2}|glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8})"),
    rule("new-relic-key", Specific, "New Relic user API key", "NRAK-<27 upper base36>",
        &["nrak-"],
        r"(?-u:\b)(?P<secret>NRAK-[A-Z0-9]{27})(?-u:\b)"),
    rule("figma-token", Specific, "Figma personal access token", "figd_<40+ base64url>",
        &["figd_"],
        r"(?-u:\b)(?P<secret>figd_[A-Za-z0-9_-]{40,})"),
    rule("airtable-token", Specific, "Airtable personal access token", "pat<14 base62>.<64 hex>",
        &["pat"],
        r"(?-u:\b)(?P<secret>pat[A-Za-z0-9]{14}\.[a-f0-9]{64})(?-u:\b)"),
    // ---- Messaging, payments, SaaS -------------------------------------
    rule("slack-bot-token", Specific, "Slack bot token", "xoxb-<digits>-<digits>-<24 base62>",
        &["xoxb-"],
        r"(?-u:\b)(?P<secret>xoxb-[0-9]{8,14}-[0-9A-Za-z-]{20,})"),
    rule("slack-user-token", Specific, "Slack user token", "xoxp-<digits>-<digits>-<digits>-<32 hex>",
        &["xoxp-"],
        r"(?-u:\b)(?P<secret>xoxp-[0-9]{8,14}-[0-9A-Za-z-]{20,})"),
    rule("slack-app-token", Specific, "Slack app-level token", "xapp-1-<id>-<digits>-<64 hex>",
        &["xapp-"],
        r"(?-u:\b)(?P<secret>xapp-\d-[A-Z0-9]+-\d+-[a-z0-9]{32,})"),
    rule("slack-token", Specific, "Slack legacy, refresh, config or workspace token", "xoxe.xoxp-1-<base62>",
        &["xoxa-", "xoxr-", "xoxs-", "xoxo-", "xoxe"],
        r"(?-u:\b)(?P<secret>(?:xoxe\.xox[bp]|xox[arsoe])-(?:\d-)?[0-9A-Za-z-]{20,})"),
    rule("slack-webhook-url", Specific, "Slack incoming webhook or workflow URL (the path after the host)", "https://hooks.slack.com/services/<T…>/<B…>/<24 base62>",
        &["hooks.slack.com"],
        r"hooks\.slack\.com/(?:services|workflows|triggers)/(?P<secret>[A-Za-z0-9_/+-]{20,})"),
    rule("discord-bot-token", Specific, "Discord bot token", "<base64 user id>.<6 base64url>.<27+ base64url>",
        &[],
        r"(?-u:\b)(?P<secret>(?:M[TDjzQ]|N[DTjz]|O[DTA])[A-Za-z0-9_-]{21,24}\.[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27,38})(?:[^A-Za-z0-9_-]|$)")
        .entropy(4.0),
    rule("discord-webhook-url", Specific, "Discord webhook URL (its token)", "https://discord.com/api/webhooks/<digits>/<68 base64url>",
        &["/api/webhooks/"],
        r"discord(?:app)?\.com/api/webhooks/[0-9]+/(?P<secret>[A-Za-z0-9_-]{60,})"),
    rule("telegram-bot-token", Specific, "Telegram bot token", "<8-10 digits>:AA<33 base64url>",
        &[":aa"],
        r"(?-u:\b)(?P<secret>[0-9]{8,10}:AA[A-Za-z0-9_-]{33})(?:[^A-Za-z0-9_-]|$)"),
    rule("stripe-key", Specific, "Stripe secret or restricted key", "sk_live_<24+ base62>",
        &["sk_live_", "sk_test_", "rk_live_", "rk_test_"],
        r"(?-u:\b)(?P<secret>[sr]k_(?:live|test)_[A-Za-z0-9]{24,})(?-u:\b)"),
    rule("stripe-webhook-secret", Specific, "Stripe webhook signing secret", "whsec_<32+ base62>",
        &["whsec_"],
        r"(?-u:\b)(?P<secret>whsec_[A-Za-z0-9]{32,})(?-u:\b)"),
    rule("twilio-api-key", Specific, "Twilio API key SID", "SK<32 hex>",
        &["sk"],
        r"(?-u:\b)(?P<secret>SK[0-9a-f]{32})(?-u:\b)"),
    rule("twilio-auth-token", Specific, "Twilio auth token (32 hex after a twilio name or an AC account SID)", "TWILIO_AUTH_TOKEN=<32 hex>",
        // No keywords: "ac" occurs everywhere, and the regex's own literal
        // search (for `twilio` and `AC`) is faster than gating it.
        &[],
        r"(?:(?i:twilio)|AC[0-9a-f]{32})[^\n]{0,80}?(?-u:\b)(?P<secret>[0-9a-f]{32})(?-u:\b)").entropy(3.0),
    rule("sendgrid-api-key", Specific, "SendGrid API key", "SG.<22 base64url>.<43 base64url>",
        &["sg."],
        r"(?-u:\b)(?P<secret>SG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43})(?:[^A-Za-z0-9_-]|$)"),
    rule("mailgun-api-key", Specific, "Mailgun API key", "key-<32 hex>",
        &["key-"],
        r"(?-u:\b)(?P<secret>key-[0-9a-f]{32})(?-u:\b)"),
    rule("shopify-token", Specific, "Shopify access, custom-app, partner or shared secret", "shpat_<32 hex>",
        &["shpat_", "shpss_", "shpca_", "shppa_"],
        r"(?-u:\b)(?P<secret>shp(?:at|ss|ca|pa)_[a-fA-F0-9]{32})(?-u:\b)"),
    rule("atlassian-api-token", Specific, "Atlassian (Jira, Confluence) API token", "ATATT3<180+ base64url>",
        &["atatt3"],
        r"(?-u:\b)(?P<secret>ATATT3[A-Za-z0-9_=-]{100,})"),
    rule("linear-api-key", Specific, "Linear API key", "lin_api_<40 base62>",
        &["lin_api_"],
        r"(?-u:\b)(?P<secret>lin_api_[A-Za-z0-9]{32,128})(?-u:\b)"),
    rule("notion-token", Specific, "Notion integration token", "ntn_<46 base62>",
        &["secret_", "ntn_"],
        r"(?-u:\b)(?P<secret>secret_[A-Za-z0-9]{43}|ntn_[0-9]{11}[A-Za-z0-9]{35})(?-u:\b)").entropy(3.5),
    rule("datadog-key", Specific, "Datadog API or application key (near a datadog name)", "DD_API_KEY=<32 hex>",
        &["datadog", "dd_ap", "dd-ap", "ddap"],
        r#"(?i)(?:datadog|dd)[_-]?(?:api|app|application)[_-]?key\\?["']?\s*(?::=|=>|=|:)\s*\\?["']?(?P<secret>[a-f0-9]{40}|[a-f0-9]{32})(?-u:\b)"#),
    rule("square-token", Specific, "Square access token or OAuth secret", "sq0atp-<22 base64url>",
        &["sq0atp-", "sq0csp-"],
        r"(?-u:\b)(?P<secret>sq0(?:atp|csp)-[A-Za-z0-9_-]{22,43})"),
    rule("facebook-access-token", Specific, "Meta (Facebook) access token", "EAA<100+ base62>",
        &["eaa"],
        r"(?-u:\b)(?P<secret>EAA[A-Za-z0-9]{100,})").entropy(4.0),
    rule("age-secret-key", Specific, "age encryption secret key", "AGE-SECRET-KEY-1<58 bech32>",
        &["age-secret-key-1"],
        r"(?P<secret>AGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58})"),
    rule("planetscale-token", Specific, "PlanetScale token or password", "pscale_tkn_<32+ base64url>",
        &["pscale_"],
        r"(?-u:\b)(?P<secret>pscale_(?:tkn|pw|oauth)_[A-Za-z0-9_.=-]{32,})"),
    rule("mapbox-secret-token", Specific, "Mapbox secret token", "sk.eyJ<base64url>.<base64url>",
        &["sk.eyj"],
        r"(?-u:\b)(?P<secret>sk\.eyJ[A-Za-z0-9_-]{20,}\.[A-Za-z0-9_-]{20,})"),
    // ---- Structured ----------------------------------------------------
    rule("jwt", Structured, "JSON Web Token", "eyJ<header>.eyJ<payload>.<signature>",
        &["eyj"],
        r"(?-u:\b)(?P<secret>eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{10,})"),
    rule("private-key", Structured, "PEM or OpenSSH private key block (real or \\n-escaped newlines); the body is replaced, the BEGIN/END lines stay",
        "-----BEGIN <kind> PRIVATE KEY-----<base64 lines>-----END <kind> PRIVATE KEY-----",
        &["private key"],
        r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----(?:\\{1,2}[rn]|\s)*(?P<secret>(?:[A-Za-z0-9+/=:,._ -]|\\{1,2}[rn]|\s)*?[A-Za-z0-9+/=])(?:\\{1,2}[rn]|\s)*-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----"),
    rule("private-key-unterminated", Structured, "A private key block's body with no END line (a truncated paste)",
        "-----BEGIN <kind> PRIVATE KEY-----<64+ base64>",
        &["private key"],
        r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----(?:\\{1,2}[rn]|\s)*(?P<secret>(?:[A-Za-z0-9+/=]|\\{1,2}[rn]|\s){63,}[A-Za-z0-9+/=])"),
    // The password runs to the last `@` before the host (an unencoded `@`
    // or `:` in it is common in pasted URLs); a `/` ends it.
    rule("url-password", Structured, "Password in a URL's user info (scheme, user and host stay)", "postgres://user:<password>@host/db",
        &["://"],
        r#"(?i)(?-u:\b)[a-z][a-z0-9+.-]{1,30}://[^\s:/@"'<>`\\]*:(?P<secret>[^\s/"'<>`\\]+)@[^\s/@"'<>`\\]"#)
        .check(Check::Password),
    rule("connection-string-password", Structured, "Password in an ADO/JDBC-style connection string", "Server=host;User Id=app;Password=<password>;",
        &["password", "pwd"],
        r#"(?i);[ \t]*(?:password|pwd)[ \t]*=[ \t]*(?P<secret>[^;\r\n"'\\]*[^;\r\n"'\\\s])"#)
        .check(Check::Password),
    rule("authorization-header", Structured, "Credentials of an Authorization (Bearer, Basic, token) header, also in curl -H", "Authorization: Bearer <token>",
        &["authorization"],
        r"(?i)authorization\\?[\x22']?\s*[:=]\s*\\?[\x22']?(?:bearer|basic|token|bot|digest|negotiate)\s+(?P<secret>[A-Za-z0-9._~+/-]{8,}=*)")
        .entropy(2.5)
        .check(Check::Password),
    rule("bearer-token", Structured, "A Bearer token without its header name", "Bearer <20+ token chars>",
        &["bearer"],
        r"(?i)(?-u:\b)bearer\s+(?P<secret>[A-Za-z0-9._~+/-]{20,}=*)").entropy(3.5)
        .check(Check::Password),
    rule("api-key-header", Structured, "An API-key header (X-API-Key, Api-Key, Private-Token, X-Auth-Token)", "X-API-Key: <16+ token chars>",
        &["api-key", "private-token", "auth-token"],
        r"(?i)(?-u:\b)(?:x-api-key|api-key|x-auth-token|private-token)\\?[\x22']?\s*:\s*\\?[\x22']?(?P<secret>[A-Za-z0-9._~+/=-]{16,})")
        .entropy(3.0)
        .check(Check::Password),
    // ---- Generic -------------------------------------------------------
    // The name's secret word is spelled lower, Capitalised or UPPER (not
    // `(?i)`): the regex's literal search then stays fast, and names are
    // written so. A lowercase letter right after the word ends the match
    // (`tokens`, `author`, `keyboard`, `passport` are not names of secrets).
    // The `name` group starts at the secret word; the redactor extends it
    // back over name characters (`DB_` of `DB_PASSWORD`), which is cheaper
    // than a regex that must guess where a name starts.
    rule("secret-assignment", Generic, "A literal value assigned to a name that says secret (.env, export, JSON, YAML, code)",
        "DB_PASSWORD=<literal>",
        &["pass", "pwd", "secret", "token", "auth", "credential", "key"],
        r#"(?P<name>(?:pass|Pass|PASS|password|Password|PASSWORD|passwd|Passwd|PASSWD|passphrase|Passphrase|PASSPHRASE|pwd|Pwd|PWD|secret|Secret|SECRET|token|Token|TOKEN|auth|Auth|AUTH|credentials?|Credentials?|CREDENTIALS?|key|Key|KEY)(?:[_.-][A-Za-z0-9_.-]*|[A-Z0-9][A-Za-z0-9_.-]*)?)\\?["']?[ \t]*(?::=|=>|=|:)[ \t]*\\?["'`]?(?P<secret>[^\s"'`,;\\]+)"#)
        .entropy(2.2)
        .check(Check::Assignment),
];

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;

    #[test]
    fn every_rule_compiles_with_a_secret_group() {
        for r in builtin() {
            let re = regex::Regex::new(r.pattern).unwrap_or_else(|e| panic!("{}: {e}", r.id));
            assert!(re.capture_names().any(|n| n == Some("secret")), "{}", r.id);
        }
    }

    #[test]
    fn ids_are_unique_kebab_case_and_keywords_lowercase() {
        let mut seen = BTreeSet::new();
        for r in builtin() {
            assert!(seen.insert(r.id), "duplicate id {}", r.id);
            assert!(
                r.id.bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-'),
                "{}",
                r.id
            );
            for k in r.keywords {
                assert_eq!(*k, k.to_ascii_lowercase(), "{}", r.id);
                assert!(!k.is_empty(), "{}", r.id);
            }
            assert!(
                !r.description.is_empty() && !r.example.is_empty(),
                "{}",
                r.id
            );
        }
    }

    #[test]
    fn there_are_at_least_forty_specific_formats() {
        let specific = builtin().iter().filter(|r| r.group == Specific).count();
        assert!(specific >= 40, "{specific}");
    }
}
