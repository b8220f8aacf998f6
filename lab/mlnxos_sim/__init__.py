"""MLNX-OS (QM8700) management simulator: JSON API over HTTPS and SSH CLI sharing one switch state.

Run: python -m lab.mlnxos_sim --name qm8700-01 --https-port 18443 --ssh-port 18022 --state STATE.json
     --cert CERT.pem --key KEY.pem --password-file PASSWORD_FILE
See switch.py for the model (running/saved configuration, SM election through a shared subnet file) and
README.md for the test hooks.
"""
