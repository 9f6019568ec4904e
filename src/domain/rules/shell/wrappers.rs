//! Programs that run another program given as their arguments (`sudo`, `timeout 5`,
//! `nice -n 5`, `xargs -I{}` ...), stripped with their options and the arguments those options
//! take, so the program they run is what rules see.

use super::words::Field;

/// How a wrapper's arguments are laid out before the command it runs.
pub(super) struct Wrapper {
    pub name: &'static str,
    /// Short options taking a value: the rest of the cluster, or else the next word.
    short_values: &'static str,
    short_flags: &'static str,
    /// Long options taking a value: `--opt=value` or `--opt value`.
    long_values: &'static [&'static str],
    long_flags: &'static [&'static str],
    /// Operands before the command (`timeout 5 rm`: the duration).
    operands: usize,
    /// `NAME=value` words before the command set its environment (`env`, `sudo`).
    assignments: bool,
    /// `-5` is an option (`nice -5 rm`).
    numeric_options: bool,
    /// Options whose value is a command string a shell runs (`env -S`, `flock -c`).
    script_options: &'static [&'static str],
    /// The remaining words, joined by spaces, are a command string a shell runs (`watch`).
    joins_into_script: bool,
}

const fn wrapper(name: &'static str) -> Wrapper {
    Wrapper {
        name,
        short_values: "",
        short_flags: "",
        long_values: &[],
        long_flags: &[],
        operands: 0,
        assignments: false,
        numeric_options: false,
        script_options: &[],
        joins_into_script: false,
    }
}

/// Every wrapper known, with the options of its common implementations (GNU coreutils,
/// util-linux, sudo, OpenBSD doas, findutils, procps).
const WRAPPERS: &[Wrapper] = &[
    Wrapper {
        short_values: "ugpCDrtTURh",
        short_flags: "AbEeHiKklnPSsVvBN",
        long_values: &[
            "--user",
            "--group",
            "--prompt",
            "--close-from",
            "--chdir",
            "--role",
            "--type",
            "--command-timeout",
            "--other-user",
            "--chroot",
            "--host",
        ],
        long_flags: &[
            "--preserve-env",
            "--login",
            "--shell",
            "--non-interactive",
            "--stdin",
            "--askpass",
            "--background",
            "--set-home",
            "--reset-timestamp",
            "--preserve-groups",
            "--bell",
        ],
        assignments: true,
        ..wrapper("sudo")
    },
    Wrapper { short_values: "uC", short_flags: "nsL", ..wrapper("doas") },
    Wrapper {
        short_values: "uC",
        short_flags: "i0v",
        long_values: &["--unset", "--chdir", "--default-signal", "--ignore-signal", "--block-signal"],
        long_flags: &["--ignore-environment", "--null", "--debug", "--list-signal-handling"],
        assignments: true,
        script_options: &["-S", "--split-string"],
        ..wrapper("env")
    },
    Wrapper { short_values: "a", short_flags: "cl", ..wrapper("exec") },
    Wrapper { short_flags: "pvV", ..wrapper("command") },
    wrapper("builtin"),
    wrapper("nohup"),
    Wrapper { short_values: "n", long_values: &["--adjustment"], numeric_options: true, ..wrapper("nice") },
    Wrapper {
        short_values: "fo",
        short_flags: "apvq",
        long_values: &["--format", "--output"],
        long_flags: &["--append", "--portability", "--verbose", "--quiet"],
        ..wrapper("time")
    },
    Wrapper {
        short_values: "sk",
        short_flags: "v",
        long_values: &["--signal", "--kill-after"],
        long_flags: &["--foreground", "--preserve-status", "--verbose"],
        operands: 1,
        ..wrapper("timeout")
    },
    Wrapper { short_flags: "cfw", long_flags: &["--ctty", "--fork", "--wait"], ..wrapper("setsid") },
    Wrapper { short_values: "ioe", long_values: &["--input", "--output", "--error"], ..wrapper("stdbuf") },
    Wrapper {
        short_values: "cnpPu",
        short_flags: "t",
        long_values: &["--class", "--classdata", "--pid", "--pgid", "--uid"],
        long_flags: &["--ignore"],
        ..wrapper("ionice")
    },
    Wrapper {
        short_values: "TPD",
        short_flags: "abdfiorRmv",
        long_values: &["--sched-runtime", "--sched-period", "--sched-deadline"],
        long_flags: &[
            "--all-tasks",
            "--batch",
            "--deadline",
            "--fifo",
            "--idle",
            "--other",
            "--rr",
            "--reset-on-fork",
            "--max",
            "--verbose",
        ],
        operands: 1,
        ..wrapper("chrt")
    },
    Wrapper { short_flags: "ac", long_flags: &["--all-tasks", "--cpu-list"], operands: 1, ..wrapper("taskset") },
    Wrapper {
        short_values: "wE",
        short_flags: "sxeunoF",
        long_values: &["--timeout", "--wait", "--conflict-exit-code"],
        long_flags: &["--shared", "--exclusive", "--unlock", "--nonblock", "--nb", "--close", "--no-fork", "--verbose"],
        operands: 1,
        script_options: &["-c", "--command"],
        ..wrapper("flock")
    },
    Wrapper { short_flags: "p", ..wrapper("unbuffer") },
    Wrapper {
        long_values: &["--userspec", "--groups"],
        long_flags: &["--skip-chdir"],
        operands: 1,
        ..wrapper("chroot")
    },
    wrapper("busybox"),
    // Tracers, sandboxes and other launchers: the options listed are the common ones; any
    // other makes every later word a possible program start for deny rules.
    Wrapper { short_values: "oepsuESPIbaXO", short_flags: "fFcCqvwxyZzTtrkdhV", ..wrapper("strace") },
    Wrapper { short_values: "oepsuEnaAlLxXS", short_flags: "fcCihiTtrbV", ..wrapper("ltrace") },
    wrapper("valgrind"),
    Wrapper { short_values: "ifs", short_flags: "u", ..wrapper("fakeroot") },
    wrapper("eatmydata"),
    wrapper("torsocks"),
    Wrapper { short_values: "f", short_flags: "q", ..wrapper("proxychains") },
    Wrapper { short_values: "f", short_flags: "q", ..wrapper("proxychains4") },
    wrapper("firejail"),
    Wrapper { short_flags: "imnpuUCTrcfa", ..wrapper("unshare") },
    Wrapper { short_values: "tSGwW", short_flags: "aimnpuUCTrF", ..wrapper("nsenter") },
    Wrapper { short_values: "pEMH", short_flags: "tPGqr", ..wrapper("systemd-run") },
    wrapper("setpriv"),
    Wrapper { short_values: "p", ..wrapper("prlimit") },
    Wrapper { short_values: "NmCPpw", short_flags: "ailsH", ..wrapper("numactl") },
    Wrapper { short_values: "g", ..wrapper("cgexec") },
    Wrapper { short_values: "nsfpe", short_flags: "al", ..wrapper("xvfb-run") },
    wrapper("dbus-run-session"),
    Wrapper { short_values: "udwtnL", short_flags: "sv", ..wrapper("trickle") },
    Wrapper { short_flags: "ev", ..wrapper("chronic") },
    Wrapper { short_flags: "n", ..wrapper("ifne") },
    Wrapper { short_flags: "acdnprz", script_options: &["-s"], ..wrapper("entr") },
    wrapper("catchsegv"),
    Wrapper {
        short_values: "nq",
        short_flags: "bcCdegprtwx",
        long_values: &["--interval", "--equexit"],
        long_flags: &[
            "--beep",
            "--color",
            "--no-color",
            "--differences",
            "--errexit",
            "--chgexit",
            "--precise",
            "--no-rerun",
            "--no-title",
            "--no-wrap",
        ],
        joins_into_script: true,
        ..wrapper("watch")
    },
    Wrapper {
        short_values: "adEILnPs",
        short_flags: "0oprtx",
        long_values: &[
            "--arg-file",
            "--delimiter",
            "--max-lines",
            "--max-args",
            "--max-procs",
            "--max-chars",
            "--process-slot-var",
            "--eof",
            "--replace",
        ],
        long_flags: &["--null", "--open-tty", "--interactive", "--no-run-if-empty", "--verbose", "--exit"],
        ..wrapper("xargs")
    },
];

/// A command string a wrapper hands to a shell, and who does.
pub(super) struct Script {
    pub words: Vec<Field>,
    pub by: String,
}

/// What the wrappers at the start of a command leave.
#[derive(Default)]
pub(super) struct Unwrapped {
    /// Where the program word is (the number of words when the wrappers name none).
    pub start: usize,
    /// An option was not known: any later word may be where the program starts.
    pub unsure: bool,
    pub script: Option<Script>,
    /// Inside `xargs`: the text it replaces with its input (`-I {}`), if any.
    pub xargs: Option<Option<String>>,
}

fn is_assignment(word: &str) -> bool {
    word.split_once('=').is_some_and(|(name, _)| {
        !name.is_empty()
            && !name.starts_with(|c: char| c.is_ascii_digit())
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    })
}

/// Strips the wrappers at the start of `fields` (nested ones too: `sudo nice -n 5 rm`).
pub(super) fn unwrap(fields: &[Field]) -> Unwrapped {
    let mut out = Unwrapped::default();
    let mut i = 0;
    while let Some(wrapper) = fields.get(i).and_then(|f| f.program_name().ok()).and_then(|name| find(&name)) {
        if wrapper.name == "xargs" {
            out.xargs = Some(None);
        }
        i += 1;
        if let Some(script) = options(wrapper, fields, &mut i, &mut out) {
            out.script = Some(script);
            break;
        }
        while wrapper.assignments && fields.get(i).and_then(Field::static_text).is_some_and(|w| is_assignment(&w)) {
            i += 1;
        }
        i += wrapper.operands;
        // `flock FILE -c COMMAND`: a command string may also follow the operands.
        if wrapper.operands > 0 && !wrapper.script_options.is_empty() {
            if let Some(script) = options(wrapper, fields, &mut i, &mut out) {
                out.script = Some(script);
                break;
            }
        }
        if wrapper.joins_into_script && i < fields.len() {
            out.script = Some(Script { words: fields[i..].to_vec(), by: wrapper.name.to_string() });
            break;
        }
    }
    out.start = i.min(fields.len());
    out
}

fn find(name: &str) -> Option<&'static Wrapper> {
    WRAPPERS.iter().find(|w| w.name == name)
}

/// Consumes the options of one wrapper from `fields[*i..]`; a command string one of them
/// carries, if any.
fn options(wrapper: &Wrapper, fields: &[Field], i: &mut usize, out: &mut Unwrapped) -> Option<Script> {
    let script = |field: Option<Field>, option: &str| Script {
        words: field.into_iter().collect(),
        by: format!("{} {option}", wrapper.name),
    };
    while let Some(text) = fields.get(*i).and_then(Field::static_text) {
        if text == "--" {
            *i += 1;
            break;
        }
        if text == "-" && wrapper.name == "env" {
            *i += 1;
            continue;
        }
        if let Some(long) = text.strip_prefix("--").filter(|l| !l.is_empty()) {
            *i += 1;
            let (name, value) = match long.split_once('=') {
                Some((name, value)) => (format!("--{name}"), Some(Field::literal(value))),
                None => (text.clone(), None),
            };
            let takes_value = wrapper.long_values.contains(&name.as_str());
            let is_script = wrapper.script_options.contains(&name.as_str());
            let value = if (takes_value || is_script) && value.is_none() {
                *i += 1;
                fields.get(*i - 1).cloned()
            } else {
                value
            };
            if is_script {
                return Some(script(value, &name));
            }
            if wrapper.name == "xargs" && name == "--replace" {
                out.xargs = Some(Some(value.map(|v| v.text()).unwrap_or_else(|| "{}".to_string())));
            }
            if !takes_value && !wrapper.long_flags.contains(&name.as_str()) {
                out.unsure = true;
            }
            continue;
        }
        let Some(cluster) = text.strip_prefix('-').filter(|c| !c.is_empty()) else { break };
        *i += 1;
        if wrapper.numeric_options && cluster.chars().all(|c| c.is_ascii_digit()) {
            continue;
        }
        for (at, c) in cluster.char_indices() {
            let attached = &cluster[at + c.len_utf8()..];
            // xargs -i[REPLACE], -e[EOF], -l[N]: values only when attached.
            if wrapper.name == "xargs" && matches!(c, 'i' | 'e' | 'l') {
                if c == 'i' {
                    out.xargs = Some(Some(if attached.is_empty() { "{}" } else { attached }.to_string()));
                }
                break;
            }
            let is_script = wrapper.script_options.contains(&format!("-{c}").as_str());
            if wrapper.short_values.contains(c) || is_script {
                let value = if attached.is_empty() {
                    *i += 1;
                    fields.get(*i - 1).cloned()
                } else {
                    Some(Field::literal(attached))
                };
                if is_script {
                    return Some(script(value, &format!("-{c}")));
                }
                if wrapper.name == "xargs" && c == 'I' {
                    out.xargs = Some(value.map(|v| v.text()));
                }
                break;
            }
            if !wrapper.short_flags.contains(c) {
                out.unsure = true;
            }
        }
    }
    None
}
