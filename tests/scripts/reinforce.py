"""pytorch/examples reinforcement_learning/reinforce.py on a tiny hand-written environment.

Same program: a Linear/Dropout/ReLU/Linear policy with softmax, Categorical(probs).sample() and
log_prob, discounted returns normalized with an eps from torch.finfo, torch.cat of the per-step
losses, Adam, a running reward. The environment (instead of gym's CartPole) shows 4 Gaussian
numbers; action 1 is right when the first two sum to more than 0, action 0 otherwise. A right action
scores 1, a wrong one costs one of 3 lives; the episode ends with the last life or after 50 steps
(a random policy lasts ~6 steps, so every episode has at least 3 steps: returns.std() is defined).
"""
import argparse
from collections import deque

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.distributions import Categorical


parser = argparse.ArgumentParser(description='PyTorch REINFORCE example')
parser.add_argument('--gamma', type=float, default=0.99, metavar='G',
                    help='discount factor (default: 0.99)')
parser.add_argument('--seed', type=int, default=543, metavar='N',
                    help='random seed (default: 543)')
parser.add_argument('--episodes', type=int, default=100, metavar='N',
                    help='number of episodes to train (default: 100)')
parser.add_argument('--log-interval', type=int, default=10, metavar='N',
                    help='interval between training status logs (default: 10)')
args = parser.parse_args()


class GuessEnv:
    """A gym-style environment: reset() -> (obs, info), step(a) -> (obs, r, terminated, truncated, info)."""

    max_steps = 50

    def __init__(self, seed):
        self.rng = np.random.RandomState(seed)

    def reset(self):
        self.t = 0
        self.lives = 3
        self.obs = self.rng.normal(size=4)
        return self.obs, {}

    def step(self, action):
        correct = int(self.obs[0] + self.obs[1] > 0)
        reward = 1.0 if action == correct else 0.0
        self.lives -= action != correct
        self.t += 1
        self.obs = self.rng.normal(size=4)
        return self.obs, reward, self.lives == 0, self.t >= self.max_steps, {}


env = GuessEnv(args.seed)
torch.manual_seed(args.seed)


class Policy(nn.Module):
    def __init__(self):
        super(Policy, self).__init__()
        self.affine1 = nn.Linear(4, 128)
        self.dropout = nn.Dropout(p=0.6)
        self.affine2 = nn.Linear(128, 2)

        self.saved_log_probs = []
        self.rewards = []

    def forward(self, x):
        x = self.affine1(x)
        x = self.dropout(x)
        x = F.relu(x)
        action_scores = self.affine2(x)
        return F.softmax(action_scores, dim=1)


policy = Policy()
optimizer = optim.Adam(policy.parameters(), lr=1e-2)
eps = torch.finfo(torch.float32).eps


def select_action(state):
    state = torch.from_numpy(state).float().unsqueeze(0)
    probs = policy(state)
    m = Categorical(probs)
    action = m.sample()
    policy.saved_log_probs.append(m.log_prob(action))
    return action.item()


def finish_episode():
    R = 0
    policy_loss = []
    returns = deque()
    for r in policy.rewards[::-1]:
        R = r + args.gamma * R
        returns.appendleft(R)
    returns = torch.tensor(returns)
    returns = (returns - returns.mean()) / (returns.std() + eps)
    for log_prob, R in zip(policy.saved_log_probs, returns):
        policy_loss.append(-log_prob * R)
    optimizer.zero_grad()
    policy_loss = torch.cat(policy_loss).sum()
    policy_loss.backward()
    optimizer.step()
    del policy.rewards[:]
    del policy.saved_log_probs[:]


def evaluate(episodes=20):
    """Mean episode length of the greedy policy (dropout off)."""
    policy.eval()
    lengths = []
    with torch.no_grad():
        for _ in range(episodes):
            state, _ = env.reset()
            for t in range(1, GuessEnv.max_steps + 1):
                probs = policy(torch.from_numpy(state).float().unsqueeze(0))
                state, _, terminated, truncated, _ = env.step(probs.argmax(dim=1).item())
                if terminated or truncated:
                    break
            lengths.append(t)
    policy.train()
    return sum(lengths) / len(lengths)


def main():
    initial_length = evaluate()
    running_reward = 10
    for i_episode in range(1, args.episodes + 1):
        state, _ = env.reset()
        ep_reward = 0
        for t in range(1, 10000):  # Don't infinite loop while learning
            action = select_action(state)
            state, reward, terminated, truncated, _ = env.step(action)
            policy.rewards.append(reward)
            ep_reward += reward
            if terminated or truncated:
                break

        running_reward = 0.05 * ep_reward + (1 - 0.05) * running_reward
        finish_episode()
        if i_episode % args.log_interval == 0:
            print('Episode {}\tLast reward: {:.2f}\tAverage reward: {:.2f}'.format(
                  i_episode, ep_reward, running_reward))
    final_length = evaluate()
    print('final: running_reward={:.2f} initial_greedy_length={:.1f} greedy_length={:.1f}'.format(
        running_reward, initial_length, final_length))


if __name__ == '__main__':
    main()
