package main

// completion.go: `streaming-hub completion bash|zsh|fish`, shell completion
// of commands, subcommands, -o's and --type's values, made from the command
// table so it cannot drift from it, and of each command's flags, which the
// scripts ask the program for (`__complete flags`, complete.go).

import (
	"fmt"
	"io"
	"sort"
	"strings"
)

func runCompletion(args []string, e env) int {
	if len(args) == 1 && (args[0] == "-h" || args[0] == "--help" || args[0] == "-help") {
		completionUsage(e.stdout)
		return exitOK
	}
	if len(args) != 1 {
		completionUsage(e.stderr)
		return exitUsage
	}
	switch args[0] {
	case "bash":
		bashCompletion(e.stdout)
	case "zsh":
		zshCompletion(e.stdout)
	case "fish":
		fishCompletion(e.stdout)
	default:
		fmt.Fprintf(e.stderr, "streaming-hub completion: unknown shell %q: bash, zsh or fish\n\n", args[0])
		completionUsage(e.stderr)
		return exitUsage
	}
	return exitOK
}

func completionUsage(w io.Writer) {
	fmt.Fprint(w, `Usage: streaming-hub completion bash|zsh|fish

Prints a script that completes streaming-hub's commands, subcommands, their
flags and the values of -o and --type. Load it:

  bash:  source <(streaming-hub completion bash)       # or save it under /etc/bash_completion.d/
  zsh:   source <(streaming-hub completion zsh)        # after compinit; or save it as _streaming-hub in $fpath
  fish:  streaming-hub completion fish > ~/.config/fish/completions/streaming-hub.fish
`)
}

func commandNames() []string {
	names := make([]string, 0, len(commands)+1)
	for name := range commands {
		names = append(names, name)
	}
	names = append(names, "help")
	sort.Strings(names)
	return names
}

func subNames(g *group) []string {
	out := make([]string, len(g.subs))
	for i, s := range g.subs {
		out[i] = s.name
	}
	return out
}

func groupNames() []string {
	names := make([]string, 0, len(groups))
	for name := range groups {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

const outputs = "table wide json yaml"

// namesOf is a group's name and its aliases (`subscriptions`, `sub`,
// `subs`, `subscription`): completion after any of them offers the same
// subcommands.
func namesOf(group string) []string {
	names := []string{group}
	for alias, plural := range aliases {
		if plural == group {
			names = append(names, alias)
		}
	}
	sort.Strings(names[1:])
	return names
}

func bashCompletion(w io.Writer) {
	fmt.Fprintf(w, `# bash completion for streaming-hub: source <(streaming-hub completion bash)
_streaming_hub() {
  local cur prev
  cur="${COMP_WORDS[COMP_CWORD]}"
  prev="${COMP_WORDS[COMP_CWORD-1]}"
  COMPREPLY=()
  if [[ "$prev" == "-o" || "$prev" == "--output" ]]; then
    COMPREPLY=($(compgen -W %q -- "$cur"))
    return
  fi
  if [[ "$prev" == "--type" ]]; then
    COMPREPLY=($(compgen -W %q -- "$cur"))
    return
  fi
  if [[ "$cur" == -* ]]; then
    COMPREPLY=($(compgen -W "$("${COMP_WORDS[0]}" __complete flags "${COMP_WORDS[@]:1:COMP_CWORD-1}" 2>/dev/null)" -- "$cur"))
    return
  fi
  if [[ $COMP_CWORD -eq 1 ]]; then
    COMPREPLY=($(compgen -W %q -- "$cur"))
    return
  fi
  local cmd="${COMP_WORDS[1]}"
  if [[ "$cmd" == "help" ]]; then
    if [[ $COMP_CWORD -eq 2 ]]; then
      COMPREPLY=($(compgen -W %q -- "$cur"))
      return
    fi
    cmd="${COMP_WORDS[2]}"
    [[ $COMP_CWORD -eq 3 ]] || return
  elif [[ $COMP_CWORD -ne 2 ]]; then
    return
  fi
  case "$cmd" in
`, outputs, destinationTypes, strings.Join(commandNames(), " "), strings.Join(commandNames(), " "))
	for _, name := range groupNames() {
		fmt.Fprintf(w, "    %s) COMPREPLY=($(compgen -W %q -- \"$cur\")) ;;\n", strings.Join(namesOf(name), "|"), strings.Join(append(subNames(groups[name]), "help"), " "))
	}
	fmt.Fprintf(w, "    completion) COMPREPLY=($(compgen -W \"bash zsh fish\" -- \"$cur\")) ;;\n")
	fmt.Fprint(w, `  esac
}
complete -F _streaming_hub streaming-hub
`)
}

// zshQuote quotes a "name:description" pair for _describe.
func zshQuote(name, desc string) string {
	return "'" + strings.ReplaceAll(name+":"+desc, "'", `'\''`) + "'"
}

func zshCompletion(w io.Writer) {
	fmt.Fprint(w, `#compdef streaming-hub
# zsh completion for streaming-hub: source <(streaming-hub completion zsh)
_streaming_hub() {
  local -a items
  if [[ "${words[CURRENT-1]}" == "-o" || "${words[CURRENT-1]}" == "--output" ]]; then
    items=(`+outputs+`)
    compadd -a items
    return
  fi
  if [[ "${words[CURRENT-1]}" == "--type" ]]; then
    items=(`+destinationTypes+`)
    compadd -a items
    return
  fi
  if [[ "${words[CURRENT]}" == -* ]]; then
    items=(${(f)"$(${words[1]} __complete flags ${words[2,CURRENT-1]} 2>/dev/null)"})
    compadd -a items
    return
  fi
  if (( CURRENT == 2 )); then
    items=(
`)
	for _, name := range commandNames() {
		summary := "the help of a command"
		if c, ok := commands[name]; ok {
			summary = c.summary
		}
		fmt.Fprintf(w, "      %s\n", zshQuote(name, summary))
	}
	fmt.Fprint(w, `    )
    _describe 'command' items
    return
  fi
  (( CURRENT == 3 )) || return
  case "${words[2]}" in
`)
	for _, name := range groupNames() {
		fmt.Fprintf(w, "    %s)\n      items=(", strings.Join(namesOf(name), "|"))
		for _, s := range groups[name].subs {
			fmt.Fprintf(w, " %s", zshQuote(s.name, s.summary))
		}
		fmt.Fprint(w, " )\n      _describe 'subcommand' items ;;\n")
	}
	fmt.Fprint(w, `    completion)
      items=(bash zsh fish)
      compadd -a items ;;
    help)
      items=(`+strings.Join(commandNames(), " ")+`)
      compadd -a items ;;
  esac
}
if (( $+functions[compdef] )); then
  compdef _streaming_hub streaming-hub
fi
`)
}

// fishQuote quotes a fish string.
func fishQuote(s string) string {
	return "'" + strings.ReplaceAll(strings.ReplaceAll(s, `\`, `\\`), "'", `\'`) + "'"
}

func fishCompletion(w io.Writer) {
	fmt.Fprintln(w, "# fish completion for streaming-hub: streaming-hub completion fish > ~/.config/fish/completions/streaming-hub.fish")
	fmt.Fprintln(w, "complete -c streaming-hub -f")
	for _, name := range commandNames() {
		summary := "the help of a command"
		if c, ok := commands[name]; ok {
			summary = c.summary
		}
		fmt.Fprintf(w, "complete -c streaming-hub -n __fish_use_subcommand -a %s -d %s\n", name, fishQuote(summary))
	}
	for _, name := range groupNames() {
		for _, s := range groups[name].subs {
			fmt.Fprintf(w, "complete -c streaming-hub -n '__fish_seen_subcommand_from %s' -a %s -d %s\n", strings.Join(namesOf(name), " "), s.name, fishQuote(s.summary))
		}
	}
	fmt.Fprintln(w, "complete -c streaming-hub -n '__fish_seen_subcommand_from completion' -a 'bash zsh fish'")
	fmt.Fprintf(w, "complete -c streaming-hub -n '__fish_seen_subcommand_from help' -a %s\n", fishQuote(strings.Join(commandNames(), " ")))
	fmt.Fprintf(w, "complete -c streaming-hub -s o -l output -x -a %s -d 'output form'\n", fishQuote(outputs))
	fmt.Fprintf(w, "complete -c streaming-hub -l type -x -a %s -d 'destination type'\n", fishQuote(destinationTypes))
	fmt.Fprintln(w, "complete -c streaming-hub -n 'string match -q -- \"-*\" (commandline -ct)' -a '(streaming-hub __complete flags (commandline -opc)[2..-1])'")
	fmt.Fprintln(w, "complete -c streaming-hub -l server -x -d 'base URL of the hub API'")
	fmt.Fprintln(w, "complete -c streaming-hub -l tenant -x -d 'tenant to act on (X-Tenant-Id)'")
	fmt.Fprintln(w, "complete -c streaming-hub -l help -d 'show help'")
}
