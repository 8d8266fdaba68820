#!/usr/bin/env sh
# One exchange to a running `chatmill serve`, from the shell (one line):
#   examples/inline/turn.sh SOCKET SESSION TURN "user text" "assistant text"
exec chatmill turn --socket "$1" --session "$2" --turn "$3" --user "$4" --assistant "$5"
