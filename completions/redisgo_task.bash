# bash completion for redisgo_task(1): its commands, each command's options, and
# configuration files for --config (*.toml here and in /etc/redisgo_task/, where the unit
# redisgo_task@NAME.service reads NAME.toml). Installed by the Debian package and by
# `cmake --install` as DATADIR/bash-completion/completions/redisgo_task, which
# bash-completion loads the first time redisgo_task is completed; or source it.
#
# Written against bash alone (no bash-completion helpers), so that
# tests/integration/ops_package_test.cpp can run it and compare what it offers with what
# `redisgo_task --help` and each `redisgo_task COMMAND --help` list.

_redisgo_task() {
  local cur=${COMP_WORDS[COMP_CWORD]} prev=""
  ((COMP_CWORD > 0)) && prev=${COMP_WORDS[COMP_CWORD - 1]}
  # --config=FILE: bash splits at '=' (COMP_WORDBREAKS), so the option is one word back.
  if [[ $prev == "=" && COMP_CWORD -gt 1 ]]; then
    prev=${COMP_WORDS[COMP_CWORD - 2]}
  elif [[ $cur == "=" ]]; then
    prev=${COMP_WORDS[COMP_CWORD - 1]} cur=""
  fi

  local commands="task status validate check handover list pause resume adopt version"
  local -A options=(
    [task]="--config --key --holder-prefix --wait --no-wait --wait-timeout --help"
    [status]="--config --key --holder-prefix --json --help"
    [validate]="--config --defaults --help"
    [check]="--config --json --help"
    [handover]="--config --key --timeout --slot --force --help"
    [list]="--config --pattern --json --help"
    [pause]="--config --key --for --reason --stop --help"
    [resume]="--config --key --help"
    [adopt]="--config --key --help"
    [version]="--help"
  )

  # The command is the first word that is not an option (the program's own options,
  # --help and --version, take no value); `task` runs what follows `--`.
  local i command="" dashdash=0
  for ((i = 1; i < COMP_CWORD; i++)); do
    if [[ -z $command ]]; then
      [[ ${COMP_WORDS[i]} != -* ]] && command=${COMP_WORDS[i]}
    elif [[ ${COMP_WORDS[i]} == "--" ]]; then
      dashdash=$i
      break
    fi
  done

  if ((dashdash > 0)); then
    # After `task ... --`: the command to run, then its arguments (files).
    if ((COMP_CWORD == dashdash + 1)); then
      COMPREPLY=($(compgen -c -- "$cur" | sort -u))
    else
      compopt -o filenames 2>/dev/null
      COMPREPLY=($(compgen -f -- "$cur"))
    fi
    return 0
  fi

  if [[ -z $command ]]; then
    if [[ $cur == -* ]]; then
      COMPREPLY=($(compgen -W "--help --version" -- "$cur"))
    else
      COMPREPLY=($(compgen -W "$commands" -- "$cur"))
    fi
    return 0
  fi

  case $prev in
    -c | --config)
      # A directory to descend into, a *.toml file, or the jobs of /etc/redisgo_task.
      compopt -o filenames 2>/dev/null
      local IFS=$'\n'
      COMPREPLY=($(compgen -d -- "$cur") $(compgen -f -X '!*.toml' -- "$cur"))
      if [[ $cur != */* || /etc/redisgo_task/ == "$cur"* || $cur == /etc/redisgo_task/* ]]; then
        local f
        for f in /etc/redisgo_task/*.toml; do
          [[ -e $f && $f == "$cur"* ]] && COMPREPLY+=("$f")
        done
      fi
      return 0
      ;;
    -t | --timeout | --for | --wait-timeout)
      COMPREPLY=($(compgen -W "30s 5m 1h 2h" -- "$cur"))
      return 0
      ;;
    -k | --key | --holder-prefix | --slot | -p | --pattern | --reason)
      return 0  # free text: nothing to offer
      ;;
  esac

  if [[ -n ${options[$command]+set} ]]; then
    if [[ $cur == -* || -z $cur ]]; then
      COMPREPLY=($(compgen -W "${options[$command]}" -- "$cur"))
    fi
  fi
  return 0
}

complete -F _redisgo_task redisgo_task
