"""What comes in from outside: connected folders, transcripts and chat exports, consent."""
